import { randomBytes } from 'node:crypto';
import { DATASET_ITEM_MAX_BYTES, newId } from '@switchboard/contracts';
import { poolOf, setContentCipher } from '@switchboard/database';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import { DatasetStore, ExperimentStore, SqlDb, sql } from '@switchboard/store';
import { seedTenant, seedTurn, startAdmission, type AdmissionFixture } from '@switchboard/testing';
import { resumeExperiment, startExperiment } from './experiments';

/**
 * Datasets and experiments on real Postgres and Redis (docs/adr/0063): items all or nothing and
 * bounded, an item from a turn, an experiment's pinned sessions and background admissions with
 * sourceRefs, refusals that write nothing, and the results computed from turn_scores rows inserted
 * here directly (the scoring hook is docs/adr/0062's).
 */
jest.setTimeout(120_000);

describe('datasets and experiments', () => {
  let fx: AdmissionFixture;
  let db: SqlDb;
  let datasets: DatasetStore;
  let experiments: ExperimentStore;

  beforeAll(async () => {
    fx = await startAdmission();
    db = new SqlDb(poolOf(fx.env.db));
    datasets = new DatasetStore(db);
    experiments = new ExperimentStore(db);
  });

  afterAll(async () => {
    await fx?.close();
  });

  const count = async (table: string, where: string, id: string) =>
    (
      await fx.env.db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM ${table} WHERE ${where} = $1::uuid`,
        id,
      )
    )[0].n;

  /** A tenant, its agent at versions 1..n (each a change of instructions), and a dataset of `items`. */
  async function setup(name: string, items: number, versions = 2) {
    const { tenantId, agentId } = await seedTenant(fx.env.db, name);
    for (let v = 2; v <= versions; v++) {
      await fx.env.db.$executeRawUnsafe(
        `UPDATE agents SET instructions = $2, version = $3 WHERE id = $1::uuid`,
        agentId,
        `v${v}`,
        v,
      );
      await fx.env.db.$executeRawUnsafe(
        `INSERT INTO agent_versions (tenant_id, agent_id, version, config, created_by)
         SELECT tenant_id, id, $2, sb_agent_config(agents), 'test' FROM agents WHERE id = $1::uuid`,
        agentId,
        v,
      );
    }
    const dataset = await datasets.createDataset(tenantId, { name: `${name}-set` });
    await datasets.addItems(
      tenantId,
      dataset.id,
      Array.from({ length: items }, (_, i) => ({ input: `question ${i}`, expected: `answer ${i}` })),
    );
    return { tenantId, agentId, datasetId: dataset.id };
  }

  it('adds items all or nothing, bounds their size, refuses another tenant, names are unique', async () => {
    const { tenantId, datasetId } = await setup('items', 0);
    const other = await seedTenant(fx.env.db, 'items-other');
    await expect(datasets.createDataset(tenantId, { name: 'items-set' })).rejects.toMatchObject({
      code: 'conflict',
    });
    // The other tenant may use the same name.
    await datasets.createDataset(other.tenantId, { name: 'items-set' });

    const big = 'x'.repeat(DATASET_ITEM_MAX_BYTES);
    await expect(
      datasets.addItems(tenantId, datasetId, [{ input: 'fine' }, { input: 'q', expected: big }]),
    ).rejects.toMatchObject({ code: 'item_too_large', status: 400 });
    await expect(datasets.addItems(other.tenantId, datasetId, [{ input: 'q' }])).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(await count('dataset_items', 'dataset_id', datasetId)).toBe(0);

    const added = await datasets.addItems(tenantId, datasetId, [
      { input: 'a', expected: '{"x": 1}', match: 'json' },
      { input: 'b', rubric: 'be kind', metadata: { tag: 't' } },
    ]);
    expect(added.map((i) => [i.input, i.match, i.rubric])).toEqual([
      ['a', 'json', null],
      ['b', 'exact', 'be kind'],
    ]);
    expect((await datasets.find(tenantId, datasetId))?.itemCount).toBe(2);
    expect(await datasets.find(other.tenantId, datasetId)).toBeUndefined();
    const page = await datasets.items(tenantId, datasetId, undefined, 1);
    expect(page).toHaveLength(2); // limit + 1: there is a next page
  });

  it("seals an encrypting tenant's item input, expected answer and rubric (docs/adr/0067)", async () => {
    const { tenantId, datasetId } = await setup('items-sealed', 0);
    await fx.env.db.tenant.update({
      where: { id: tenantId },
      data: { settings: { encryption: { mode: 'on' } } },
    });
    setContentCipher(
      new TenantCipher(fx.env.db, LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`)),
    );
    try {
      const [added] = await datasets.addItems(tenantId, datasetId, [
        { input: 'what is the capital?', expected: 'Rome', rubric: 'names the city' },
      ]);
      expect(added).toMatchObject({
        input: 'what is the capital?',
        expected: 'Rome',
        rubric: 'names the city',
      });
      const raw = await fx.env.db.$queryRaw<{ input: string; expected: string; rubric: string }[]>`
        SELECT input, expected, rubric FROM dataset_items WHERE id = ${added.id}::uuid`;
      expect(raw).toEqual([
        {
          input: expect.stringMatching(/^sbe1\.t\./),
          expected: expect.stringMatching(/^sbe1\.t\./),
          rubric: expect.stringMatching(/^sbe1\.t\./),
        },
      ]);
      const [listed] = (await datasets.items(tenantId, datasetId, undefined, 10)) ?? [];
      expect(listed).toMatchObject({
        input: 'what is the capital?',
        expected: 'Rome',
        rubric: 'names the city',
      });
    } finally {
      setContentCipher(undefined);
    }
  });

  it("takes an item from a completed turn of the tenant's, not from another's or an unfinished one", async () => {
    const { tenantId, agentId, datasetId } = await setup('from-turn', 0);
    const sessionId = newId();
    await fx.env.db.session.create({ data: { id: sessionId, tenantId, agentId } });
    const admitted = await fx.admission.admit({
      tenantId,
      sessionId,
      kind: 'operator_prompt',
      origin: { kind: 'operator' },
      body: { type: 'text', text: 'what is 2+2?' },
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
    });
    await expect(datasets.itemFromTurn(tenantId, datasetId, admitted.turnId, {})).rejects.toMatchObject({
      code: 'conflict',
    });
    await fx.env.db.turn.update({
      where: { id: admitted.turnId },
      data: { status: 'completed', finalText: '4' },
    });
    const other = await seedTenant(fx.env.db, 'from-turn-other');
    const otherSet = await datasets.createDataset(other.tenantId, { name: 'x' });
    await expect(
      datasets.itemFromTurn(other.tenantId, otherSet.id, admitted.turnId, {}),
    ).rejects.toMatchObject({
      code: 'not_found',
    });
    const item = await datasets.itemFromTurn(tenantId, datasetId, admitted.turnId, { match: 'contains' });
    expect(item).toMatchObject({
      input: 'what is 2+2?',
      expected: '4',
      match: 'contains',
      sourceTurnId: admitted.turnId,
    });
  });

  it('starts an experiment: a pinned session per item and version, admitted at background priority with sourceRefs', async () => {
    const { tenantId, agentId, datasetId } = await setup('start', 3);
    const experiment = await startExperiment(
      { store: experiments, admission: fx.admission, logger: fx.logger },
      tenantId,
      { datasetId, agentId, versions: [1, 2] },
    );
    const runs = await db.rows<{
      version: number;
      pinned: number;
      status: string;
      priority: string;
      sourceRefs: Record<string, string>;
      datasetItemId: string;
      id: string;
      input: string;
      text: string;
      turnId: string;
    }>(sql`
      SELECT r.id, r.turn_id AS "turnId", r.agent_version AS version, s.agent_version AS pinned, r.status, t.priority,
        m.source_refs AS "sourceRefs", r.dataset_item_id AS "datasetItemId", i.input, m.body->>'text' AS text
      FROM experiment_runs r JOIN sessions s ON s.id = r.session_id JOIN turns t ON t.id = r.turn_id
      JOIN messages m ON m.id = t.input_message_id JOIN dataset_items i ON i.id = r.dataset_item_id
      WHERE r.experiment_id = ${experiment.id}::uuid`);
    expect(runs).toHaveLength(6);
    for (const r of runs) {
      expect(r.pinned).toBe(r.version);
      expect(r.status).toBe('admitted');
      expect(r.priority).toBe('background');
      expect(r.text).toBe(r.input);
      expect(r.sourceRefs).toEqual({
        experimentId: experiment.id,
        datasetItemId: r.datasetItemId,
        experimentRunId: r.id,
      });
    }
    expect(new Set(runs.map((r) => `${r.datasetItemId}:${r.version}`)).size).toBe(6);
    // Each turn is in the background band (behind the tenant's interactive work in the harness's
    // choice); its job is a plain wake-up (docs/adr/0080).
    const jobs = await fx.turnsQueue.getJobs(['prioritized', 'waiting']);
    const ours = jobs.filter((j) => runs.some((r) => r.turnId === (j.data as { turnId: string }).turnId));
    expect(ours).toHaveLength(6);
    for (const j of ours) expect(j.priority).toBe(0);
    const bands = await fx.env.db.turn.findMany({ where: { id: { in: runs.map((r) => r.turnId) } } });
    expect(new Set(bands.map((t) => t.priority))).toEqual(new Set(['background']));
    const listed = await experiments.page(tenantId, undefined, 10);
    expect(listed.map((e) => e.id)).toEqual([experiment.id]);
  });

  it("refuses another tenant's agent or dataset (404), an unknown version and an empty dataset (400): nothing written", async () => {
    const a = await setup('refuse', 2);
    const b = await setup('refuse-other', 2);
    const empty = await datasets.createDataset(a.tenantId, { name: 'empty' });
    const deps = { store: experiments, admission: fx.admission, logger: fx.logger };
    const cases: [{ datasetId: string; agentId: string; versions: number[] }, string][] = [
      [{ datasetId: a.datasetId, agentId: b.agentId, versions: [1] }, 'not_found'],
      [{ datasetId: b.datasetId, agentId: a.agentId, versions: [1] }, 'not_found'],
      [{ datasetId: a.datasetId, agentId: a.agentId, versions: [1, 3] }, 'validation_failed'],
      [{ datasetId: empty.id, agentId: a.agentId, versions: [1] }, 'validation_failed'],
    ];
    for (const [body, code] of cases) {
      await expect(startExperiment(deps, a.tenantId, body)).rejects.toMatchObject({ code });
    }
    expect(await count('experiments', 'tenant_id', a.tenantId)).toBe(0);
    expect(await count('sessions', 'tenant_id', a.tenantId)).toBe(0);

    // A paused tenant: the first admission is refused and the experiment undone.
    await fx.env.db.tenant.update({ where: { id: a.tenantId }, data: { killSwitch: true } });
    await expect(
      startExperiment(deps, a.tenantId, { datasetId: a.datasetId, agentId: a.agentId, versions: [1] }),
    ).rejects.toMatchObject({ code: 'tenant_paused' });
    expect(await count('experiments', 'tenant_id', a.tenantId)).toBe(0);
    expect(await count('sessions', 'tenant_id', a.tenantId)).toBe(0);
  });

  it('computes per-version means, pass rates, cost, latency and per-item winners; completes when every turn settled', async () => {
    const { tenantId, agentId, datasetId } = await setup('results', 0);
    const items = await datasets.addItems(tenantId, datasetId, [
      { input: 'q0', expected: 'a0' },
      { input: 'q1', expected: 'a1' },
      { input: 'q2', expected: 'a2' },
    ]);
    // The experiment's rows, with turns seeded (not run) in its sessions.
    const { experiment, runs } = await experiments.create(tenantId, { datasetId, agentId, versions: [1, 2] });
    const turnOf = new Map<string, string>();
    for (const run of runs) {
      const turn = await seedTurn(
        fx.env.db,
        { tenantId, agentId, sessionId: run.sessionId },
        { status: 'running', agentVersion: run.version, costUsd: run.version === 1 ? 0.01 : 0.02 },
      );
      turnOf.set(run.id, turn.id);
      await experiments.admitted(run.id, turn.id);
    }
    const runFor = (item: number, version: number) =>
      runs.find((r) => r.datasetItemId === items[item].id && r.version === version)!;
    const score = async (
      item: number,
      version: number,
      scorer: string,
      value: number,
      passed: boolean | null,
      status = 'scored',
    ) => {
      const run = runFor(item, version);
      await fx.env.db.turnScore.create({
        data: {
          id: newId(),
          tenantId,
          agentId,
          agentVersion: version,
          turnId: turnOf.get(run.id)!,
          sessionId: run.sessionId,
          source: 'scorer',
          scorer,
          kind: scorer === 'dataset:rubric' ? 'llm_judge' : 'rule',
          status,
          score: status === 'scored' ? value : null,
          passed,
        },
      });
    };
    // v1: item0 1/pass, item1 0/fail, item2 1/pass + a judge 0.5 with no verdict; a skipped row never counts.
    await score(0, 1, 'dataset:expected', 1, true);
    await score(1, 1, 'dataset:expected', 0, false);
    await score(2, 1, 'dataset:expected', 1, true);
    await score(2, 1, 'dataset:rubric', 0.5, null);
    await score(0, 1, 'dataset:rubric', 0, null, 'skipped');
    // v2: item0 0/fail, item1 1/pass, item2 1/pass.
    await score(0, 2, 'dataset:expected', 0, false);
    await score(1, 2, 'dataset:expected', 1, true);
    await score(2, 2, 'dataset:expected', 1, true);

    let r = (await experiments.results(tenantId, experiment.id))!;
    expect(r.experiment.status).toBe('running');
    const v1 = r.results.find((x) => x.version === 1)!;
    const v2 = r.results.find((x) => x.version === 2)!;
    expect(v1.meanScore).toBeCloseTo(2.5 / 4);
    expect(v1.passRate).toBeCloseTo(2 / 3);
    expect(v1).toMatchObject({ runs: 3, scored: 3, failed: 0 });
    expect(v1.costUsd).toBeCloseTo(0.03);
    expect(v2.meanScore).toBeCloseTo(2 / 3);
    expect(v2.passRate).toBeCloseTo(2 / 3);
    expect(v2.costUsd).toBeCloseTo(0.06);
    const winners = Object.fromEntries(r.items.map((i) => [i.datasetItemId, i.winner]));
    expect(winners[items[0].id]).toBe(1);
    expect(winners[items[1].id]).toBe(2);
    // item2: v1 (1 + 0.5) / 2 = 0.75 < v2 1.
    expect(winners[items[2].id]).toBe(2);
    const byVersion = r.items.find((i) => i.datasetItemId === items[2].id)!.byVersion;
    expect(byVersion['1']).toMatchObject({ score: 0.75, passed: true, status: 'running' });

    // Ended but hooks not settled: still running. Settled: completed, completed_at stored once.
    const turnIds = [...turnOf.values()];
    await fx.env.db.turn.updateMany({
      where: { id: { in: turnIds } },
      data: { status: 'completed', startedAt: new Date(Date.now() - 1500), completedAt: new Date() },
    });
    expect((await experiments.results(tenantId, experiment.id))!.experiment.status).toBe('running');
    await fx.env.db.turn.updateMany({
      where: { id: { in: turnIds.slice(1) } },
      data: { hooksSettledAt: new Date() },
    });
    expect((await experiments.results(tenantId, experiment.id))!.experiment.status).toBe('running');
    await fx.env.db.turn.updateMany({ where: { id: { in: turnIds } }, data: { hooksSettledAt: new Date() } });
    r = (await experiments.results(tenantId, experiment.id))!;
    expect(r.experiment.status).toBe('completed');
    expect(r.experiment.completedAt).toBeInstanceOf(Date);
    expect(r.results[0].meanLatencyMs).toBeGreaterThan(1000);
    const again = (await experiments.results(tenantId, experiment.id))!;
    expect(again.experiment.completedAt).toEqual(r.experiment.completedAt);

    // A tie has no winner; another tenant sees no experiment.
    await score(1, 1, 'dataset:rubric', 1, null);
    await score(1, 2, 'dataset:rubric', 0, null);
    r = (await experiments.results(tenantId, experiment.id))!;
    expect(r.items.find((i) => i.datasetItemId === items[1].id)!.winner).toBeNull();
    const other = await seedTenant(fx.env.db, 'results-other');
    expect(await experiments.results(other.tenantId, experiment.id)).toBeUndefined();
  });

  it('admits the runs a crashed creator left pending, once, when the experiment is read late enough', async () => {
    const { tenantId, agentId, datasetId } = await setup('resume', 2);
    const deps = { store: experiments, admission: fx.admission, logger: fx.logger };
    // The transaction committed, then the creator died: no run admitted.
    const { experiment, runs } = await experiments.create(tenantId, { datasetId, agentId, versions: [1, 2] });
    // Admitted before the crash: run 0 (its turn is there, its row not updated yet).
    await fx.admission.admit({
      tenantId,
      sessionId: runs[0].sessionId,
      kind: 'operator_prompt',
      origin: { kind: 'operator' },
      body: { type: 'text', text: runs[0].input },
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
      priority: 'background',
      metadata: { experimentId: experiment.id },
      sourceRefs: {
        experimentId: experiment.id,
        datasetItemId: runs[0].datasetItemId,
        experimentRunId: runs[0].id,
      },
      idempotencyKey: `experiment-run:${runs[0].id}`,
    });
    // Too young: nothing; another tenant: nothing.
    expect(await resumeExperiment(deps, tenantId, experiment.id, 60_000)).toBe(0);
    const other = await seedTenant(fx.env.db, 'resume-other');
    expect(await resumeExperiment(deps, other.tenantId, experiment.id, 0)).toBe(0);
    expect(await resumeExperiment(deps, tenantId, experiment.id, 0)).toBe(4);
    expect(await resumeExperiment(deps, tenantId, experiment.id, 0)).toBe(0);
    const turns = await db.rows<{ sessionId: string; n: number }>(sql`
      SELECT r.session_id AS "sessionId", count(t.id)::int AS n FROM experiment_runs r
      LEFT JOIN turns t ON t.session_id = r.session_id
      WHERE r.experiment_id = ${experiment.id}::uuid AND r.status = 'admitted' AND r.turn_id IS NOT NULL
      GROUP BY r.session_id`);
    // Every run admitted, each session with exactly one turn (run 0's admission came back as it was).
    expect(turns).toHaveLength(4);
    expect(turns.every((t) => t.n === 1)).toBe(true);
  });
});
