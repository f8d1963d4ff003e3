import { z } from 'zod';
import { PageQuery } from './api';
import { ApiSchemas } from './responses';

/**
 * Datasets and experiments (issue 35, docs/adr/0063): a dataset is a tenant's named list of inputs with
 * the answer expected and/or a rubric; an experiment runs each item on versions of an agent and compares
 * the versions by the scores of their turns (turn_scores).
 */

/** An item's input, expected answer, rubric and metadata (as JSON) together, at most (UTF-8 bytes). */
export const DATASET_ITEM_MAX_BYTES = 32 * 1024;
/** Items one POST /v1/datasets/:id/items adds at most (a batch, or the lines of an NDJSON file). */
export const DATASET_ITEMS_PER_REQUEST = 1000;
/** Runs (items × versions) one experiment makes at most. */
export const EXPERIMENT_MAX_RUNS = 5000;
/** Versions one experiment compares at most. */
export const EXPERIMENT_MAX_VERSIONS = 10;

export const DatasetName = z
  .string()
  .min(1)
  .max(100)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/,
    'a dataset name is 1 to 100 of A-Z, a-z, 0-9, _ . : -, starting with a letter or digit',
  );

export const CreateDatasetRequest = z.strictObject({
  name: DatasetName,
  description: z.string().max(2000).optional(),
});
export type CreateDatasetRequest = z.infer<typeof CreateDatasetRequest>;

/** How `expected` is compared with the answer (both trimmed): equal, contained, or equal as parsed JSON. */
export const ExpectedMatch = z.enum(['exact', 'contains', 'json']);
export type ExpectedMatch = z.infer<typeof ExpectedMatch>;

export const DatasetItemInput = z.strictObject({
  input: z.string().min(1),
  expected: z.string().optional(),
  match: ExpectedMatch.optional(),
  rubric: z.string().min(1).max(8000).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type DatasetItemInput = z.infer<typeof DatasetItemInput>;

/**
 * One item (its fields at the top level), or `{items: [...]}` (1 to 1000, all or nothing); an NDJSON
 * body is read as the batch of its lines.
 */
export const AddDatasetItemsRequest = DatasetItemInput.partial()
  .extend({ items: z.array(DatasetItemInput).min(1).max(DATASET_ITEMS_PER_REQUEST).optional() })
  .superRefine((body, ctx) => {
    const single = Object.keys(body).some((k) => k !== 'items');
    if (body.items !== undefined && single) {
      ctx.addIssue({ code: 'custom', path: ['items'], message: 'give either one item or `items`, not both' });
    } else if (body.items === undefined && body.input === undefined) {
      ctx.addIssue({ code: 'custom', path: ['input'], message: 'an item needs `input` (or give `items`)' });
    }
  });
export type AddDatasetItemsRequest = z.infer<typeof AddDatasetItemsRequest>;

export const DatasetItemFromTurnRequest = z.strictObject({
  turnId: z.uuid(),
  match: ExpectedMatch.optional(),
  rubric: z.string().min(1).max(8000).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type DatasetItemFromTurnRequest = z.infer<typeof DatasetItemFromTurnRequest>;

export const DatasetsQuery = PageQuery;
export const DatasetItemsQuery = PageQuery;
export const ExperimentsQuery = PageQuery.extend({
  datasetId: z.uuid().optional(),
  agentId: z.uuid().optional(),
});

export const DatasetResponse = z
  .strictObject({
    id: z.uuid(),
    name: z.string(),
    description: z.string().nullable(),
    itemCount: z.int(),
    createdAt: z.string(),
  })
  .register(ApiSchemas, { id: 'Dataset' });
export type DatasetResponse = z.infer<typeof DatasetResponse>;

export const DatasetPageResponse = z
  .strictObject({ data: z.array(DatasetResponse), nextCursor: z.string().nullable() })
  .register(ApiSchemas, { id: 'DatasetPage' });
export type DatasetPageResponse = z.infer<typeof DatasetPageResponse>;

export const DatasetItemResponse = z
  .strictObject({
    id: z.uuid(),
    datasetId: z.uuid(),
    input: z.string(),
    expected: z.string().nullable(),
    match: ExpectedMatch,
    rubric: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    sourceTurnId: z.uuid().nullable(),
    createdAt: z.string(),
  })
  .register(ApiSchemas, { id: 'DatasetItem' });
export type DatasetItemResponse = z.infer<typeof DatasetItemResponse>;

export const DatasetItemPageResponse = z
  .strictObject({ data: z.array(DatasetItemResponse), nextCursor: z.string().nullable() })
  .register(ApiSchemas, { id: 'DatasetItemPage' });
export type DatasetItemPageResponse = z.infer<typeof DatasetItemPageResponse>;

export const AddDatasetItemsResponse = z
  .strictObject({ data: z.array(DatasetItemResponse) })
  .register(ApiSchemas, { id: 'AddedDatasetItems' });
export type AddDatasetItemsResponse = z.infer<typeof AddDatasetItemsResponse>;

export const CreateExperimentRequest = z.strictObject({
  datasetId: z.uuid(),
  agentId: z.uuid(),
  versions: z
    .array(z.int().min(1))
    .min(1)
    .max(EXPERIMENT_MAX_VERSIONS)
    .refine((v) => new Set(v).size === v.length, 'versions must be distinct'),
});
export type CreateExperimentRequest = z.infer<typeof CreateExperimentRequest>;

export const ExperimentStatus = z.enum(['running', 'completed', 'cancelled']);

export const ExperimentVersionResult = z
  .strictObject({
    version: z.int(),
    /** Mean of the counted scores (status scored, score set) of the version's turns; null when none. */
    meanScore: z.number().nullable(),
    /** Share of passed among the scores with a verdict; null when none has one. */
    passRate: z.number().nullable(),
    costUsd: z.number(),
    meanLatencyMs: z.number().nullable(),
    runs: z.int(),
    scored: z.int(),
    failed: z.int(),
  })
  .register(ApiSchemas, { id: 'ExperimentVersionResult' });
export type ExperimentVersionResult = z.infer<typeof ExperimentVersionResult>;

export const ExperimentItemResult = z
  .strictObject({
    datasetItemId: z.uuid(),
    byVersion: z.record(
      z.string(),
      z.strictObject({
        turnId: z.uuid().nullable(),
        status: z.string().nullable(),
        score: z.number().nullable(),
        passed: z.boolean().nullable(),
      }),
    ),
    winner: z.int().nullable(),
  })
  .register(ApiSchemas, { id: 'ExperimentItemResult' });
export type ExperimentItemResult = z.infer<typeof ExperimentItemResult>;

export const ExperimentResponse = z
  .strictObject({
    id: z.uuid(),
    datasetId: z.uuid(),
    agentId: z.uuid(),
    versions: z.array(z.int()),
    status: ExperimentStatus,
    createdAt: z.string(),
    completedAt: z.string().nullable(),
  })
  .register(ApiSchemas, { id: 'Experiment' });
export type ExperimentResponse = z.infer<typeof ExperimentResponse>;

export const ExperimentResultsResponse = ExperimentResponse.extend({
  results: z.array(ExperimentVersionResult),
  items: z.array(ExperimentItemResult),
}).register(ApiSchemas, { id: 'ExperimentResults' });
export type ExperimentResultsResponse = z.infer<typeof ExperimentResultsResponse>;

export const ExperimentPageResponse = z
  .strictObject({ data: z.array(ExperimentResponse), nextCursor: z.string().nullable() })
  .register(ApiSchemas, { id: 'ExperimentPage' });
export type ExperimentPageResponse = z.infer<typeof ExperimentPageResponse>;
