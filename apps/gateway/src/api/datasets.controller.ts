import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { resumeExperiment, startExperiment, type Admission } from '@switchboard/admission';
import {
  AddDatasetItemsResponse,
  DatasetItemPageResponse,
  DatasetItemResponse,
  DatasetPageResponse,
  DatasetResponse,
  ExperimentPageResponse,
  ExperimentResponse,
  ExperimentResultsResponse,
  notFound,
} from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { ADMISSION, LOGGER } from '@switchboard/platform';
import {
  DatasetStore,
  ExperimentStore,
  type DatasetItemRow,
  type DatasetRow,
  type ExperimentRow,
  type SqlDb,
} from '@switchboard/store';
import { KeyAgents, TenantId } from '../platform/auth/guard';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import {
  AddDatasetItemsDto,
  CreateDatasetDto,
  CreateExperimentDto,
  DatasetItemFromTurnDto,
  ExperimentsQueryDto,
  PageQueryDto,
} from './dto';
import { decodeCursor, encodeCursor, pathId } from './presenters';
import { GATEWAY_SQL } from './streams.controller';

/** The route an NDJSON body is accepted on (platform/body.ts reads its lines as `{items}`). */
export const DATASET_ITEMS_ROUTE = '/v1/datasets/:id/items';

const presentDataset = (d: DatasetRow): DatasetResponse => ({
  id: d.id,
  name: d.name,
  description: d.description,
  itemCount: d.itemCount,
  createdAt: d.createdAt.toISOString(),
});

const presentItem = (i: DatasetItemRow): DatasetItemResponse => ({
  id: i.id,
  datasetId: i.datasetId,
  input: i.input,
  expected: i.expected,
  match: i.match,
  rubric: i.rubric,
  metadata: i.metadata,
  sourceTurnId: i.sourceTurnId,
  createdAt: i.createdAt.toISOString(),
});

const presentExperiment = (e: ExperimentRow): ExperimentResponse => ({
  id: e.id,
  datasetId: e.datasetId,
  agentId: e.agentId,
  versions: e.versions,
  status: e.status,
  createdAt: e.createdAt.toISOString(),
  completedAt: e.completedAt?.toISOString() ?? null,
});

/** Pages of rows fetched `limit + 1` at a time: the extra row says there is a next page. */
function paged<R, P>(rows: R[], limit: number, present: (r: R) => P, key: (r: R) => string) {
  const page = rows.slice(0, limit);
  return {
    data: page.map(present),
    nextCursor: rows.length > limit ? encodeCursor([key(page[page.length - 1])]) : null,
  };
}

/**
 * Datasets (docs/adr/0063): a tenant's named lists of evaluation inputs, each with the answer
 * expected and/or a rubric. Items come one at a time, as a batch (`{items}`, at most 1,000, all or
 * nothing), as an NDJSON file (one item a line, all or nothing) or from an ended turn.
 */
@TenantApi('evaluation')
@Controller('v1/datasets')
export class DatasetsController {
  private readonly store: DatasetStore;

  constructor(@Inject(GATEWAY_SQL) sql: SqlDb) {
    this.store = new DatasetStore(sql);
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'createDataset',
    summary: 'Create a dataset',
    description:
      'A named list of evaluation inputs (docs/adr/0063). `name` is unique within the tenant: a second dataset of the same name is 409. Nothing is written on a refusal.',
    status: 201,
    schema: DatasetResponse,
    errors: [...BODY_ERRORS, 409],
  })
  async create(@TenantId() tenantId: string, @Body() body: CreateDatasetDto): Promise<DatasetResponse> {
    return presentDataset(await this.store.createDataset(tenantId, body));
  }

  @Get()
  @Operation({
    id: 'listDatasets',
    summary: "The tenant's datasets",
    description: 'By id, with their item counts; paged by `limit` (default 50, at most 200) and `cursor`.',
    status: 200,
    schema: DatasetPageResponse,
    errors: [400],
  })
  async list(@TenantId() tenantId: string, @Query() q: PageQueryDto): Promise<DatasetPageResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    return paged(await this.store.page(tenantId, after?.[0], limit), limit, presentDataset, (d) => d.id);
  }

  @Get(':id')
  @Operation({
    id: 'getDataset',
    summary: 'One dataset',
    description: "Its name, description and item count. 404 when it is not the calling tenant's.",
    status: 200,
    schema: DatasetResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<DatasetResponse> {
    const dataset = await this.store.find(tenantId, pathId(id, 'dataset'));
    if (!dataset) throw notFound('dataset');
    return presentDataset(dataset);
  }

  @Delete(':id')
  @HttpCode(204)
  @Operation({
    id: 'deleteDataset',
    summary: 'Delete a dataset, its items and its experiments',
    description:
      "The experiments' sessions and turns stay (and their scores). 404 when it is not the calling tenant's.",
    status: 204,
    errors: [404],
  })
  async delete(@TenantId() tenantId: string, @Param('id') id: string): Promise<void> {
    if (!(await this.store.delete(tenantId, pathId(id, 'dataset')))) throw notFound('dataset');
  }

  @Post(':id/items')
  @HttpCode(201)
  @Operation({
    id: 'addDatasetItems',
    summary: 'Add items to a dataset: one, a batch, or an NDJSON file',
    description:
      'One item (`{input, expected?, match?, rubric?, metadata?}`), a batch (`{items: [...]}`, 1 to 1,000) or, ' +
      'with `Content-Type: application/x-ndjson`, one item a line (blank lines skipped, at most 1,000). ' +
      '`expected` is compared with the answer (`match`: exact, the default; contains; json: equal as parsed JSON) by the ' +
      'rule `dataset:expected`; `rubric` is given to the judge `dataset:rubric` (docs/adr/0063). An item whose input, ' +
      'expected, rubric and metadata together exceed 32 KiB is 400 `item_too_large`; a line that is not JSON is 400 ' +
      "`invalid_json` naming it. All or nothing: on any refusal no item is added. 404 for a dataset not the tenant's.",
    status: 201,
    schema: AddDatasetItemsResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async addItems(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: AddDatasetItemsDto,
  ): Promise<AddDatasetItemsResponse> {
    const { items: batch, ...one } = body;
    const items = batch ?? [{ ...one, input: one.input ?? '' }];
    return { data: (await this.store.addItems(tenantId, pathId(id, 'dataset'), items)).map(presentItem) };
  }

  @Get(':id/items')
  @Operation({
    id: 'listDatasetItems',
    summary: "A dataset's items",
    description:
      "By id; paged by `limit` (default 50, at most 200) and `cursor`. 404 for a dataset not the tenant's.",
    status: 200,
    schema: DatasetItemPageResponse,
    errors: [400, 404],
  })
  async items(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: PageQueryDto,
  ): Promise<DatasetItemPageResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const rows = await this.store.items(tenantId, pathId(id, 'dataset'), after?.[0], limit);
    if (!rows) throw notFound('dataset');
    return paged(rows, limit, presentItem, (i) => i.id);
  }

  @Post(':id/items/from-turn')
  @HttpCode(201)
  @Operation({
    id: 'addDatasetItemFromTurn',
    summary: 'Add an item taken from an ended turn',
    description:
      "The item's input is the turn's input message, its `expected` the turn's final answer (a good answer kept " +
      "as a regression case); `match`, `rubric` and `metadata` as for any item. 404 for a dataset or a turn not the tenant's; " +
      '409 for a turn that has not completed with a text answer. Nothing is written on a refusal.',
    status: 201,
    schema: DatasetItemResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async fromTurn(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: DatasetItemFromTurnDto,
  ): Promise<DatasetItemResponse> {
    const datasetId = pathId(id, 'dataset');
    if (!(await this.store.find(tenantId, datasetId))) throw notFound('dataset');
    const { turnId, ...extra } = body;
    return presentItem(await this.store.itemFromTurn(tenantId, datasetId, turnId, extra));
  }
}

/** How old an experiment must be before a read admits the runs its creator left pending. */
const RESUME_AFTER_MS = 60_000;

/**
 * Experiments (docs/adr/0063): a dataset run on versions of an agent. Each (item, version) gets a
 * session pinned to that version and its item's input admitted through the normal admission at
 * `background` priority, with sourceRefs {experimentId, datasetItemId, experimentRunId}; the scoring
 * hook scores those turns with every scorer of the version and the item's own checks. Results are
 * computed on read.
 */
@TenantApi('evaluation')
@Controller('v1/experiments')
export class ExperimentsController {
  private readonly store: ExperimentStore;

  constructor(
    @Inject(GATEWAY_SQL) sql: SqlDb,
    @Inject(ADMISSION) private readonly admission: Admission,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.store = new ExperimentStore(sql);
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'createExperiment',
    summary: 'Run a dataset on versions of an agent',
    description:
      "For every item of the dataset and every listed version: a session pinned to that version and the item's input " +
      "admitted at `background` priority (the tenant's interactive work goes first), its message carrying sourceRefs " +
      '`{experimentId, datasetItemId, experimentRunId}`. Answers 201 once every run is admitted; GET ' +
      "/v1/experiments/{id} follows it. 404 for a dataset or an agent not the tenant's; 400 for a version the agent " +
      'does not have, an empty dataset or more than 5,000 runs; 403/409 when the tenant is paused or the agent stopped. ' +
      'Nothing is written on a refusal.',
    status: 201,
    schema: ExperimentResponse,
    errors: [...BODY_ERRORS, 403, 404, 409],
  })
  async create(@TenantId() tenantId: string, @Body() body: CreateExperimentDto): Promise<ExperimentResponse> {
    return presentExperiment(
      await startExperiment(
        { store: this.store, admission: this.admission, logger: this.logger },
        tenantId,
        body,
      ),
    );
  }

  @Get()
  @Operation({
    id: 'listExperiments',
    summary: "The tenant's experiments, newest first",
    description:
      'Optionally of one dataset (`datasetId`) or agent (`agentId`); paged by `limit` (default 50, at most 200) and `cursor`. ' +
      'The status shown is the one stored: GET /v1/experiments/{id} brings it up to date.',
    status: 200,
    schema: ExperimentPageResponse,
    errors: [400],
  })
  async list(
    @TenantId() tenantId: string,
    @Query() q: ExperimentsQueryDto,
    @KeyAgents() only: string[] | undefined,
  ): Promise<ExperimentPageResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const rows = await this.store.page(tenantId, after?.[0], limit, {
      datasetId: q.datasetId,
      agentId: q.agentId,
      // A key limited to agents (docs/adr/0066) lists only their experiments.
      ...(only ? { agentIds: only } : {}),
    });
    return paged(rows, limit, presentExperiment, (e) => e.id);
  }

  @Get(':id')
  @Operation({
    id: 'getExperiment',
    summary: 'An experiment and its results',
    description:
      'Per version: `meanScore` (mean of the scored turn_scores of its turns), `passRate` (share passed among the scores ' +
      "with a verdict), `costUsd` (its turns' cost), `meanLatencyMs`, `runs`, `scored` (runs with a score) and `failed`. " +
      "Per item: each version's turn, score (mean of the turn's scores) and verdict (every verdict passed), and the " +
      "`winner` (the version with the highest score; null on a tie). `completed` once every run's turn ended and its " +
      'post-turn hooks settled. A read a minute or more after the creation admits any run its creator left unadmitted ' +
      "(idempotent per run). 404 when it is not the calling tenant's.",
    status: 200,
    schema: ExperimentResultsResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<ExperimentResultsResponse> {
    const experimentId = pathId(id, 'experiment');
    // Runs a crashed creator left unadmitted are admitted now (idempotent per run), after a grace
    // that lets a creation still in progress finish its own.
    await resumeExperiment(
      { store: this.store, admission: this.admission, logger: this.logger },
      tenantId,
      experimentId,
      RESUME_AFTER_MS,
    );
    const r = await this.store.results(tenantId, experimentId);
    if (!r) throw notFound('experiment');
    return { ...presentExperiment(r.experiment), results: r.results, items: r.items };
  }
}
