import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { startExperiment } from '@switchboard/admission';
import { DatasetStore, ExperimentStore, SqlDb, sql } from '@switchboard/store';
import { seedTenant, startAdmission, type AdmissionFixture } from '@switchboard/testing';
import type { HookContext } from './context';
import { extraScorersFor } from './scoring-extra';

/**
 * The scorers an experiment turn gets beyond its version's (docs/adr/0063): its dataset item's
 * expected answer (rule `dataset:expected`) and rubric (judge `dataset:rubric`), read through the
 * sourceRefs of its input message; a turn no experiment admitted gets none.
 */
jest.setTimeout(120_000);

describe('extraScorersFor', () => {
  let fx: AdmissionFixture;
  let db: SqlDb;

  beforeAll(async () => {
    fx = await startAdmission();
    db = new SqlDb(poolOf(fx.env.db));
  });

  afterAll(async () => {
    await fx?.close();
  });

  it("gives an experiment turn its item's checks, and any other turn none", async () => {
    const { tenantId, agentId } = await seedTenant(fx.env.db, 'extra');
    const datasets = new DatasetStore(db);
    const dataset = await datasets.createDataset(tenantId, { name: 'extra' });
    await datasets.addItems(tenantId, dataset.id, [
      { input: 'q', expected: '{"a":1}', match: 'json', rubric: 'is it JSON?' },
      { input: 'r', expected: 'only expected' },
    ]);
    const experiment = await startExperiment(
      { store: new ExperimentStore(db), admission: fx.admission, logger: fx.logger },
      tenantId,
      { datasetId: dataset.id, agentId, versions: [1] },
    );
    const runs = await db.rows<{ turnId: string; sessionId: string; input: string }>(sql`
      SELECT r.turn_id AS "turnId", r.session_id AS "sessionId", i.input
      FROM experiment_runs r JOIN dataset_items i ON i.id = r.dataset_item_id
      WHERE r.experiment_id = ${experiment.id}::uuid ORDER BY i.input`);
    const ctx = { sql: db } as unknown as HookContext;
    expect(
      await extraScorersFor(ctx, { id: runs[0].turnId, tenantId, sessionId: runs[0].sessionId }),
    ).toEqual([
      {
        name: 'dataset:expected',
        kind: 'rule',
        check: 'expected',
        expected: '{"a":1}',
        match: 'json',
        samplePercent: 100,
      },
      { name: 'dataset:rubric', kind: 'llm_judge', rubric: 'is it JSON?', samplePercent: 100 },
    ]);
    expect(
      await extraScorersFor(ctx, { id: runs[1].turnId, tenantId, sessionId: runs[1].sessionId }),
    ).toEqual([
      {
        name: 'dataset:expected',
        kind: 'rule',
        check: 'expected',
        expected: 'only expected',
        match: 'exact',
        samplePercent: 100,
      },
    ]);
    // The same turn under another tenant's id, and a turn no experiment admitted: none.
    const other = await seedTenant(fx.env.db, 'extra-other');
    expect(
      await extraScorersFor(ctx, { id: runs[0].turnId, tenantId: other.tenantId, sessionId: null }),
    ).toEqual([]);
    const sessionId = newId();
    await fx.env.db.session.create({ data: { id: sessionId, tenantId, agentId } });
    const plain = await fx.admission.admit({
      tenantId,
      sessionId,
      kind: 'operator_prompt',
      origin: { kind: 'operator' },
      body: { type: 'text', text: 'hi' },
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
    });
    expect(await extraScorersFor(ctx, { id: plain.turnId, tenantId, sessionId })).toEqual([]);
  });
});
