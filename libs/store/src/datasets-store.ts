import {
  AppError,
  DATASET_ITEM_MAX_BYTES,
  EXPERIMENT_MAX_RUNS,
  newId,
  notFound,
  type DatasetItemInput,
  type ExpectedMatch,
} from '@switchboard/contracts';
import { sealText } from '@switchboard/database';
import { json, ofTenant, sql, type SqlDb } from './sql';

/**
 * Datasets, their items and experiments over them (issue 35, docs/adr/0063). Every statement is
 * filtered by tenant; a refusal (another tenant's dataset or agent, an unknown version, an item too
 * large) is thrown before anything is written, and a batch is one transaction.
 */

export interface DatasetRow {
  id: string;
  name: string;
  description: string | null;
  itemCount: number;
  createdAt: Date;
}

export interface DatasetItemRow {
  id: string;
  datasetId: string;
  input: string;
  expected: string | null;
  match: ExpectedMatch;
  rubric: string | null;
  metadata: Record<string, unknown>;
  sourceTurnId: string | null;
  createdAt: Date;
}

export interface ExperimentRow {
  id: string;
  datasetId: string;
  agentId: string;
  versions: number[];
  status: 'running' | 'completed' | 'cancelled';
  createdAt: Date;
  completedAt: Date | null;
}

/** A run to admit: its session (pinned to `version`) and the item's input. */
export interface ExperimentRunToAdmit {
  id: string;
  datasetItemId: string;
  version: number;
  sessionId: string;
  input: string;
}

export interface ExperimentVersionResult {
  version: number;
  meanScore: number | null;
  passRate: number | null;
  costUsd: number;
  meanLatencyMs: number | null;
  runs: number;
  scored: number;
  failed: number;
}

export interface ExperimentItemResult {
  datasetItemId: string;
  byVersion: Record<
    string,
    { turnId: string | null; status: string | null; score: number | null; passed: boolean | null }
  >;
  winner: number | null;
}

export interface ExperimentResults {
  experiment: ExperimentRow;
  results: ExperimentVersionResult[];
  items: ExperimentItemResult[];
}

/** Postgres unique violation. */
const isUniqueViolation = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === '23505';

/** An item's size as the cap counts it: input, expected, rubric and metadata (as JSON), UTF-8 bytes. */
export function datasetItemBytes(item: DatasetItemInput): number {
  return (
    Buffer.byteLength(item.input) +
    Buffer.byteLength(item.expected ?? '') +
    Buffer.byteLength(item.rubric ?? '') +
    Buffer.byteLength(item.metadata ? JSON.stringify(item.metadata) : '')
  );
}

/** Throws 400 `item_too_large` naming every item over the cap (by index); nothing is written. */
export function checkItemSizes(items: readonly DatasetItemInput[]): void {
  const over = items
    .map((item, index) => ({ index, bytes: datasetItemBytes(item) }))
    .filter((i) => i.bytes > DATASET_ITEM_MAX_BYTES);
  if (over.length > 0) {
    throw new AppError(
      'item_too_large',
      `${over.length} item(s) exceed ${DATASET_ITEM_MAX_BYTES} bytes (input, expected, rubric and metadata together): nothing was added`,
      { maxBytes: DATASET_ITEM_MAX_BYTES, items: over.slice(0, 20) },
    );
  }
}

export class DatasetStore {
  constructor(private readonly sql: SqlDb) {}

  async createDataset(tenantId: string, d: { name: string; description?: string }): Promise<DatasetRow> {
    try {
      const row = await this.sql.first<DatasetRow>(sql`
        INSERT INTO datasets (id, tenant_id, name, description)
        VALUES (${newId()}::uuid, ${tenantId}::uuid, ${d.name}, ${d.description ?? null})
        RETURNING id, name, description, 0 AS "itemCount", created_at AS "createdAt"`);
      return row!;
    } catch (err) {
      if (isUniqueViolation(err))
        throw new AppError('conflict', `a dataset named "${d.name}" exists already`);
      throw err;
    }
  }

  async page(tenantId: string, after: string | undefined, limit: number): Promise<DatasetRow[]> {
    return this.sql.rows<DatasetRow>(sql`
      SELECT d.id, d.name, d.description, d.created_at AS "createdAt",
        (SELECT count(*)::int FROM dataset_items i WHERE i.dataset_id = d.id) AS "itemCount"
      FROM datasets d
      WHERE ${ofTenant('d.tenant_id', tenantId)} AND (${after ?? null}::uuid IS NULL OR d.id > ${after ?? null}::uuid)
      ORDER BY d.id LIMIT ${limit + 1}`);
  }

  async find(tenantId: string, id: string): Promise<DatasetRow | undefined> {
    return this.sql.first<DatasetRow>(sql`
      SELECT d.id, d.name, d.description, d.created_at AS "createdAt",
        (SELECT count(*)::int FROM dataset_items i WHERE i.dataset_id = d.id) AS "itemCount"
      FROM datasets d WHERE d.id = ${id}::uuid AND ${ofTenant('d.tenant_id', tenantId)}`);
  }

  /** Deletes the dataset, its items and the experiments over it (their sessions and turns stay). */
  async delete(tenantId: string, id: string): Promise<boolean> {
    return (
      (await this.sql.execute(
        sql`DELETE FROM datasets WHERE id = ${id}::uuid AND ${ofTenant('tenant_id', tenantId)}`,
      )) > 0
    );
  }

  /** Adds the items in one transaction (all or nothing); 404 for a dataset not the tenant's. */
  async addItems(
    tenantId: string,
    datasetId: string,
    items: readonly (DatasetItemInput & { sourceTurnId?: string })[],
  ): Promise<DatasetItemRow[]> {
    checkItemSizes(items);
    // An item's input, expected answer and rubric are content (often a conversation's words, taken
    // from a turn): sealed for an encrypting tenant (docs/adr/0067); read back opened.
    const stored = await Promise.all(
      items.map(async (i) => ({
        input: await sealText(tenantId, i.input),
        expected: await sealText(tenantId, i.expected ?? null),
        rubric: await sealText(tenantId, i.rubric ?? null),
      })),
    );
    return this.sql.transaction(async (tx) => {
      const dataset = await tx.first<{ id: string }>(sql`
        SELECT id FROM datasets WHERE id = ${datasetId}::uuid AND ${ofTenant('tenant_id', tenantId)} FOR SHARE`);
      if (!dataset) throw notFound('dataset');
      const rows = items.map((i, ord) => ({
        ord,
        id: newId(),
        input: stored[ord].input,
        expected: stored[ord].expected,
        match: i.match ?? 'exact',
        rubric: stored[ord].rubric,
        metadata: i.metadata ?? {},
        sourceTurnId: i.sourceTurnId ?? null,
      }));
      return tx.rows<DatasetItemRow>(sql`
        INSERT INTO dataset_items (id, tenant_id, dataset_id, input, expected, match, rubric, metadata, source_turn_id)
        SELECT r.id, ${tenantId}::uuid, ${datasetId}::uuid, r.input, r.expected, r.match, r.rubric,
          coalesce(r.metadata, '{}'::jsonb), r."sourceTurnId"
        FROM jsonb_to_recordset(${json(rows)}::jsonb)
          AS r(ord int, id uuid, input text, expected text, match text, rubric text, metadata jsonb, "sourceTurnId" uuid)
        ORDER BY r.ord
        RETURNING ${ITEM_COLUMNS}`);
    });
  }

  async items(tenantId: string, datasetId: string, after: string | undefined, limit: number) {
    const dataset = await this.find(tenantId, datasetId);
    if (!dataset) return undefined;
    return this.sql.rows<DatasetItemRow>(sql`
      SELECT ${ITEM_COLUMNS} FROM dataset_items
      WHERE dataset_id = ${datasetId}::uuid AND (${after ?? null}::uuid IS NULL OR id > ${after ?? null}::uuid)
      ORDER BY id LIMIT ${limit + 1}`);
  }

  /**
   * An item from an ended turn of the tenant's: its input message's text, and its final text as the
   * expected answer. 404 for another tenant's turn or an unknown one; 409 for a turn with no final text
   * (not completed).
   */
  async itemFromTurn(
    tenantId: string,
    datasetId: string,
    turnId: string,
    extra: Pick<DatasetItemInput, 'match' | 'rubric' | 'metadata'>,
  ): Promise<DatasetItemRow> {
    // The body whole, read in TypeScript: sealed content (docs/adr/0067) is opened by the read.
    const read = await this.sql.first<{ body: unknown; finalText: string | null; status: string }>(sql`
      SELECT m.body, t.final_text AS "finalText", t.status
      FROM turns t JOIN messages m ON m.id = t.input_message_id
      WHERE t.id = ${turnId}::uuid AND ${ofTenant('t.tenant_id', tenantId)}`);
    if (!read) throw notFound('turn');
    const text = (read.body as { text?: unknown } | null)?.text;
    const turn = { ...read, input: typeof text === 'string' ? text : null };
    if (turn.status !== 'completed' || turn.finalText === null || !turn.input) {
      throw new AppError('conflict', `the turn has not completed with a text answer (status ${turn.status})`);
    }
    const [row] = await this.addItems(tenantId, datasetId, [
      { input: turn.input, expected: turn.finalText, ...extra, sourceTurnId: turnId },
    ]);
    return row;
  }
}

const ITEM_COLUMNS = sql`id, dataset_id AS "datasetId", input, expected, match, rubric, metadata,
  source_turn_id AS "sourceTurnId", created_at AS "createdAt"`;

const EXPERIMENT_COLUMNS = sql`id, dataset_id AS "datasetId", agent_id AS "agentId", versions, status,
  created_at AS "createdAt", completed_at AS "completedAt"`;

export class ExperimentStore {
  constructor(private readonly sql: SqlDb) {}

  /**
   * The experiment, a session per (item, version) pinned to that version (metadata `experimentId`) and
   * the runs, in one transaction; nothing is admitted yet (the caller admits each run through Admission).
   * 404 for a dataset or an agent not the tenant's; 400 for a version the agent does not have, an empty
   * dataset, or more than EXPERIMENT_MAX_RUNS runs. Nothing is written on a refusal.
   */
  async create(
    tenantId: string,
    e: { datasetId: string; agentId: string; versions: number[] },
  ): Promise<{ experiment: ExperimentRow; runs: ExperimentRunToAdmit[] }> {
    return this.sql.transaction(async (tx) => {
      const dataset = await tx.first<{ id: string; items: number }>(sql`
        SELECT d.id, (SELECT count(*)::int FROM dataset_items i WHERE i.dataset_id = d.id) AS items
        FROM datasets d WHERE d.id = ${e.datasetId}::uuid AND ${ofTenant('d.tenant_id', tenantId)} FOR SHARE`);
      if (!dataset) throw notFound('dataset');
      const agent = await tx.first<{ id: string }>(sql`
        SELECT id FROM agents WHERE id = ${e.agentId}::uuid AND ${ofTenant('tenant_id', tenantId)}
          AND deleted_at IS NULL`);
      if (!agent) throw notFound('agent');
      const known = await tx.rows<{ version: number }>(sql`
        SELECT version FROM agent_versions
        WHERE agent_id = ${e.agentId}::uuid AND version = ANY(${e.versions}::int[])`);
      const missing = e.versions.filter((v) => !known.some((k) => k.version === v));
      if (missing.length > 0) {
        throw new AppError('validation_failed', `the agent has no version ${missing.join(', ')}`, {
          issues: [{ path: 'versions', message: `unknown version(s): ${missing.join(', ')}` }],
        });
      }
      if (dataset.items === 0) {
        throw new AppError('validation_failed', 'the dataset has no items', {
          issues: [{ path: 'datasetId', message: 'the dataset has no items' }],
        });
      }
      if (dataset.items * e.versions.length > EXPERIMENT_MAX_RUNS) {
        throw new AppError(
          'validation_failed',
          `${dataset.items} items × ${e.versions.length} versions is over ${EXPERIMENT_MAX_RUNS} runs`,
          { issues: [{ path: 'versions', message: `at most ${EXPERIMENT_MAX_RUNS} runs` }] },
        );
      }
      const experimentId = newId();
      const experiment = (await tx.first<ExperimentRow>(sql`
        INSERT INTO experiments (id, tenant_id, dataset_id, agent_id, versions)
        VALUES (${experimentId}::uuid, ${tenantId}::uuid, ${e.datasetId}::uuid, ${e.agentId}::uuid, ${e.versions}::int[])
        RETURNING ${EXPERIMENT_COLUMNS}`))!;
      const items = await tx.rows<{ id: string; input: string }>(sql`
        SELECT id, input FROM dataset_items WHERE dataset_id = ${e.datasetId}::uuid ORDER BY id`);
      const runs: ExperimentRunToAdmit[] = items.flatMap((item) =>
        e.versions.map((version) => ({
          id: newId(),
          datasetItemId: item.id,
          version,
          sessionId: newId(),
          input: item.input,
        })),
      );
      const plan = runs.map((r) => ({
        id: r.id,
        item: r.datasetItemId,
        version: r.version,
        session: r.sessionId,
      }));
      await tx.execute(sql`
        INSERT INTO sessions (id, tenant_id, agent_id, title, metadata, agent_version, updated_at)
        SELECT r.session, ${tenantId}::uuid, ${e.agentId}::uuid, ${`experiment ${experimentId}`},
          jsonb_build_object('experimentId', ${experimentId}::text, 'experimentRunId', r.id::text,
            'datasetItemId', r.item::text),
          r.version, now()
        FROM jsonb_to_recordset(${json(plan)}::jsonb) AS r(id uuid, item uuid, version int, session uuid)`);
      await tx.execute(sql`
        INSERT INTO experiment_runs (id, experiment_id, dataset_item_id, agent_version, session_id)
        SELECT r.id, ${experimentId}::uuid, r.item, r.version, r.session
        FROM jsonb_to_recordset(${json(plan)}::jsonb) AS r(id uuid, item uuid, version int, session uuid)`);
      return { experiment, runs };
    });
  }

  /** Undoes a creation whose first admission was refused (a paused tenant, a stopped agent). */
  async discard(tenantId: string, experimentId: string): Promise<void> {
    await this.sql.transaction(async (tx) => {
      await tx.execute(sql`
        DELETE FROM sessions WHERE id IN (SELECT session_id FROM experiment_runs WHERE experiment_id = ${experimentId}::uuid)
          AND ${ofTenant('tenant_id', tenantId)}
          AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = sessions.id)`);
      await tx.execute(
        sql`DELETE FROM experiments WHERE id = ${experimentId}::uuid AND ${ofTenant('tenant_id', tenantId)}`,
      );
    });
  }

  /**
   * The runs of a running experiment still not admitted (the process that created it died before
   * admitting them), when it was created at least `olderThanMs` ago; none for another tenant's.
   */
  async pendingRuns(
    tenantId: string,
    experimentId: string,
    olderThanMs: number,
  ): Promise<ExperimentRunToAdmit[]> {
    return this.sql.rows<ExperimentRunToAdmit>(sql`
      SELECT r.id, r.dataset_item_id AS "datasetItemId", r.agent_version AS version, r.session_id AS "sessionId",
        i.input
      FROM experiment_runs r
      JOIN experiments e ON e.id = r.experiment_id
      JOIN dataset_items i ON i.id = r.dataset_item_id
      WHERE r.experiment_id = ${experimentId}::uuid AND ${ofTenant('e.tenant_id', tenantId)}
        AND e.status = 'running' AND r.status = 'pending'
        AND e.created_at <= now() - make_interval(secs => ${olderThanMs / 1000}::float8)
      ORDER BY r.id`);
  }

  async admitted(runId: string, turnId: string): Promise<void> {
    await this.sql.execute(
      sql`UPDATE experiment_runs SET turn_id = ${turnId}::uuid, status = 'admitted' WHERE id = ${runId}::uuid`,
    );
  }

  async failed(runId: string, error: string): Promise<void> {
    await this.sql.execute(
      sql`UPDATE experiment_runs SET status = 'failed', error = ${error.slice(0, 500)} WHERE id = ${runId}::uuid AND turn_id IS NULL`,
    );
  }

  async page(
    tenantId: string,
    after: string | undefined,
    limit: number,
    f: { datasetId?: string; agentId?: string; agentIds?: string[] } = {},
  ): Promise<ExperimentRow[]> {
    return this.sql.rows<ExperimentRow>(sql`
      SELECT ${EXPERIMENT_COLUMNS} FROM experiments
      WHERE ${ofTenant('tenant_id', tenantId)} AND (${after ?? null}::uuid IS NULL OR id < ${after ?? null}::uuid)
        AND ${f.agentIds === undefined ? sql`true` : sql`agent_id = ANY(${f.agentIds}::uuid[])`}
        AND (${f.datasetId ?? null}::uuid IS NULL OR dataset_id = ${f.datasetId ?? null}::uuid)
        AND (${f.agentId ?? null}::uuid IS NULL OR agent_id = ${f.agentId ?? null}::uuid)
      ORDER BY id DESC LIMIT ${limit + 1}`);
  }

  /**
   * The experiment with its results, computed on read: per version the mean of the counted scores
   * (status scored, score set) of its runs' turns, the pass rate among scores with a verdict, the turns'
   * cost, mean latency (started → completed), runs, runs scored, runs failed; per item each version's
   * turn, mean score and verdict (every verdict passed), and the winner (the highest score; null on a
   * tie or with fewer than two versions scored). Completed when every run's turn ended and its hooks
   * settled (or its admission failed): completed_at is stored the first time that is seen.
   */
  async results(tenantId: string, id: string): Promise<ExperimentResults | undefined> {
    let experiment = await this.sql.first<ExperimentRow>(sql`
      SELECT ${EXPERIMENT_COLUMNS} FROM experiments WHERE id = ${id}::uuid AND ${ofTenant('tenant_id', tenantId)}`);
    if (!experiment) return undefined;
    const runs = await this.sql.rows<{
      datasetItemId: string;
      version: number;
      runStatus: string;
      turnId: string | null;
      turnStatus: string | null;
      settled: boolean;
      costUsd: string | null;
      latencyMs: number | null;
      scoreSum: number | null;
      scoreCount: number;
      passedCount: number;
      verdictCount: number;
    }>(sql`
      SELECT r.dataset_item_id AS "datasetItemId", r.agent_version AS version, r.status AS "runStatus",
        r.turn_id AS "turnId", t.status AS "turnStatus",
        (t.status IN ('completed', 'failed', 'cancelled') AND t.hooks_settled_at IS NOT NULL) AS settled,
        t.cost_usd::text AS "costUsd",
        (extract(epoch FROM (t.completed_at - t.started_at)) * 1000)::float8 AS "latencyMs",
        s.score_sum AS "scoreSum", coalesce(s.score_count, 0)::int AS "scoreCount",
        coalesce(s.passed_count, 0)::int AS "passedCount", coalesce(s.verdict_count, 0)::int AS "verdictCount"
      FROM experiment_runs r
      LEFT JOIN turns t ON t.id = r.turn_id
      LEFT JOIN LATERAL (
        SELECT sum(ts.score) AS score_sum, count(*) AS score_count,
          count(*) FILTER (WHERE ts.passed) AS passed_count,
          count(*) FILTER (WHERE ts.passed IS NOT NULL) AS verdict_count
        FROM turn_scores ts
        WHERE ts.turn_id = r.turn_id AND ts.status = 'scored' AND ts.score IS NOT NULL
      ) s ON r.turn_id IS NOT NULL
      WHERE r.experiment_id = ${id}::uuid
      ORDER BY r.dataset_item_id, r.agent_version`);

    const done = runs.every((r) => r.runStatus === 'failed' || r.settled);
    if (experiment.status === 'running' && done) {
      experiment =
        (await this.sql.first<ExperimentRow>(sql`
          UPDATE experiments SET status = 'completed', completed_at = coalesce(completed_at, now())
          WHERE id = ${id}::uuid AND status = 'running' RETURNING ${EXPERIMENT_COLUMNS}`)) ?? experiment;
    }

    const results: ExperimentVersionResult[] = experiment.versions.map((version) => {
      const of = runs.filter((r) => r.version === version);
      const scoreCount = of.reduce((n, r) => n + r.scoreCount, 0);
      const scoreSum = of.reduce((n, r) => n + (r.scoreSum ?? 0), 0);
      const verdicts = of.reduce((n, r) => n + r.verdictCount, 0);
      const passed = of.reduce((n, r) => n + r.passedCount, 0);
      const latencies = of.filter((r) => r.latencyMs !== null).map((r) => r.latencyMs!);
      return {
        version,
        meanScore: scoreCount > 0 ? scoreSum / scoreCount : null,
        passRate: verdicts > 0 ? passed / verdicts : null,
        costUsd: of.reduce((n, r) => n + Number(r.costUsd ?? 0), 0),
        meanLatencyMs: latencies.length > 0 ? latencies.reduce((a, b) => a + b, 0) / latencies.length : null,
        runs: of.length,
        scored: of.filter((r) => r.scoreCount > 0).length,
        failed: of.filter(
          (r) => r.runStatus === 'failed' || r.turnStatus === 'failed' || r.turnStatus === 'cancelled',
        ).length,
      };
    });

    const byItem = new Map<string, typeof runs>();
    for (const r of runs) byItem.set(r.datasetItemId, [...(byItem.get(r.datasetItemId) ?? []), r]);
    const items: ExperimentItemResult[] = [...byItem].map(([datasetItemId, of]) => {
      const byVersion: ExperimentItemResult['byVersion'] = {};
      for (const r of of) {
        byVersion[String(r.version)] = {
          turnId: r.turnId,
          status: r.turnStatus ?? (r.runStatus === 'failed' ? 'failed' : null),
          score: r.scoreCount > 0 ? (r.scoreSum ?? 0) / r.scoreCount : null,
          passed: r.verdictCount > 0 ? r.passedCount === r.verdictCount : null,
        };
      }
      return { datasetItemId, byVersion, winner: winnerOf(byVersion) };
    });
    return { experiment, results, items };
  }
}

/** The version whose score is highest; null when fewer than two versions are scored or the best tie. */
export function winnerOf(byVersion: Record<string, { score: number | null }>): number | null {
  const scored = Object.entries(byVersion).filter(([, v]) => v.score !== null) as [
    string,
    { score: number },
  ][];
  if (scored.length < 2) return null;
  scored.sort((a, b) => b[1].score - a[1].score);
  if (Math.abs(scored[0][1].score - scored[1][1].score) < 1e-9) return null;
  return Number(scored[0][0]);
}
