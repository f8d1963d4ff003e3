import { AgentPageResponse, AgentResponse, ArchetypeListResponse, newId } from '@switchboard/contracts';
import { ARCHETYPES, archetype, resolveSubagent } from '@switchboard/subagents';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startGateway } from '../support/stack';

const ADMIN = 'test-admin-token-0123456789';

/**
 * Built-in archetypes and the tier rules on saved definitions (issue 11, docs/adr/0025) through the
 * HTTP API: GET /v1/archetypes, `archetype` defaults on create, allowedSubagents checked against
 * tenant agents and archetypes, a change that would break another agent's list refused with the
 * referrer named, and materialised built-in rows listed and read-only.
 */
describe('archetypes and tiers', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let api: Api;
  let other: Api;
  let tenantId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config());
    ({ api, tenantId } = await newTenant(gateway.url, ADMIN, 'archetypes'));
    ({ api: other } = await newTenant(gateway.url, ADMIN, 'other'));
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  async function create(body: Record<string, unknown>): Promise<AgentResponse> {
    const res = await api.post('/v1/agents', body);
    expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: expect.anything() });
    return AgentResponse.parse(res.body);
  }

  it('lists the built-in archetypes with tier, prompt, tools and model hint', async () => {
    const res = await api.get('/v1/archetypes');
    expect(res.status).toBe(200);
    const list = ArchetypeListResponse.parse(res.body);
    expect(list.data.map((a) => a.name)).toEqual(ARCHETYPES.map((a) => a.name));
    expect(list.data.find((a) => a.name === 'planner')).toMatchObject({
      tier: 'reasoning',
      model: 'hint:reasoning',
    });
    expect((await new (api.constructor as typeof Api)(gateway.url).get('/v1/archetypes')).status).toBe(401);
  });

  it('fills tier, instructions, tools and model from a named archetype; explicit fields win', async () => {
    const r = await create({ name: 'my-researcher', archetype: 'researcher' });
    const a = archetype('researcher')!;
    expect(r).toMatchObject({
      archetype: 'researcher',
      tier: 'worker',
      instructions: a.instructions,
      tools: [...a.tools],
      model: a.model,
      builtIn: false,
    });
    const o = await create({
      name: 'lead',
      archetype: 'orchestrator',
      tier: 'reasoning',
      tools: ['word_count'],
    });
    expect(o).toMatchObject({ tier: 'reasoning', tools: ['word_count'], model: 'hint:chat' });
    // A label that is no archetype is kept, with the plain defaults.
    const c = await create({ name: 'custom', archetype: 'helper' });
    expect(c).toMatchObject({ archetype: 'helper', tier: 'chat', tools: [], instructions: '' });
  });

  it('accepts allowedSubagents that obey the tier rules, archetypes and tenant agents alike', async () => {
    await create({ name: 'leaf', tier: 'worker' });
    const chat = await create({
      name: 'front',
      tier: 'chat',
      allowedSubagents: ['planner', 'researcher', 'leaf'],
    });
    expect(chat.allowedSubagents).toEqual(['planner', 'researcher', 'leaf']);
    await create({ name: 'deep', tier: 'reasoning', allowedSubagents: ['leaf', 'critic'] });
  });

  it.each([
    [
      'a chat agent listing a chat archetype',
      { tier: 'chat', allowedSubagents: ['researcher', 'orchestrator'] },
      'allowedSubagents.1',
    ],
    [
      'a reasoning agent listing a reasoning archetype',
      { tier: 'reasoning', allowedSubagents: ['planner'] },
      'allowedSubagents.0',
    ],
    [
      'a reasoning agent listing a chat tenant agent',
      { tier: 'reasoning', allowedSubagents: ['front'] },
      'allowedSubagents.0',
    ],
    ['a worker listing anything', { tier: 'worker', allowedSubagents: ['researcher'] }, 'allowedSubagents'],
    [
      'a worker archetype default listing anything',
      { archetype: 'critic', allowedSubagents: ['summarizer'] },
      'allowedSubagents',
    ],
    ['an unknown name', { tier: 'chat', allowedSubagents: ['ghost'] }, 'allowedSubagents.0'],
    ['a duplicate', { tier: 'chat', allowedSubagents: ['researcher', 'researcher'] }, 'allowedSubagents.1'],
  ])('refuses %s with 400 naming the entry', async (_what, body, path) => {
    const res = await api.post('/v1/agents', { name: 'refused', ...body });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.issues).toEqual([expect.objectContaining({ path })]);
    // Nothing was stored.
    expect(await env.db.agent.count({ where: { tenantId, name: 'refused' } })).toBe(0);
  });

  it('does not resolve another tenant’s agents', async () => {
    const res = await other.post('/v1/agents', { name: 'x', tier: 'chat', allowedSubagents: ['leaf'] });
    expect(res.status).toBe(400);
  });

  it('refuses a tier change, rename or delete that breaks a referrer (409 naming it), then allows it once unlisted', async () => {
    const helper = await create({ name: 'helper', tier: 'worker' });
    const boss = await create({ name: 'boss', tier: 'chat', allowedSubagents: ['helper'] });

    for (const [method, body] of [
      ['patch', { tier: 'chat' }],
      ['patch', { name: 'helper2' }],
      ['delete', undefined],
    ] as const) {
      const res =
        method === 'patch'
          ? await api.patch(`/v1/agents/${helper.id}`, body)
          : await api.delete(`/v1/agents/${helper.id}`);
      expect({ method, body, status: res.status }).toEqual({ method, body, status: 409 });
      expect(res.body.error.code).toBe('conflict');
      expect(res.body.error.details.referrers).toEqual([
        expect.objectContaining({ id: boss.id, name: 'boss', subagent: 'helper' }),
      ]);
    }
    // A reasoning helper still fits a chat boss.
    expect((await api.patch(`/v1/agents/${helper.id}`, { tier: 'reasoning' })).status).toBe(200);
    // The agent's own list is checked against its new tier.
    const own = await api.patch(`/v1/agents/${boss.id}`, { tier: 'worker' });
    expect(own.status).toBe(400);
    expect(own.body.error.details.issues[0].path).toBe('allowedSubagents');
    expect((await api.patch(`/v1/agents/${boss.id}`, { allowedSubagents: [] })).status).toBe(200);
    expect((await api.patch(`/v1/agents/${helper.id}`, { tier: 'chat' })).status).toBe(200);
    expect((await api.delete(`/v1/agents/${helper.id}`)).status).toBe(204);
  });

  it('refuses a new override of an archetype name that breaks a referrer', async () => {
    await create({ name: 'thinker', tier: 'reasoning', allowedSubagents: ['summarizer'] });
    const res = await api.post('/v1/agents', { name: 'summarizer', tier: 'reasoning' });
    expect(res.status).toBe(409);
    expect(res.body.error.details.referrers).toEqual([expect.objectContaining({ name: 'thinker' })]);
    // A worker override fits.
    expect((await create({ name: 'summarizer', tier: 'worker', instructions: 'Mine.' })).builtIn).toBe(false);
  });

  it('lists a materialised built-in archetype marked builtIn, and keeps its row read-only', async () => {
    const row = await resolveSubagent(env.db, tenantId, 'critic');
    const all: AgentResponse[] = [];
    for (let cursor: string | null = null; ;) {
      const res = await api.get(`/v1/agents?limit=5${cursor ? `&cursor=${cursor}` : ''}`);
      const page = AgentPageResponse.parse(res.body);
      all.push(...page.data);
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    expect(all.find((a) => a.id === row!.id)).toMatchObject({
      name: 'critic',
      builtIn: true,
      tier: 'worker',
    });
    expect(all.filter((a) => a.id !== row!.id).every((a) => !a.builtIn)).toBe(true);
    const patch = await api.patch(`/v1/agents/${row!.id}`, { instructions: 'x' });
    expect(patch.status).toBe(409);
    expect(patch.body.error.message).toContain('built-in');
    expect((await api.delete(`/v1/agents/${row!.id}`)).status).toBe(409);
    expect((await api.get(`/v1/agents/${row!.id}`)).body.builtIn).toBe(true);
    // Another tenant sees none of it.
    expect((await other.get(`/v1/agents/${row!.id}`)).status).toBe(404);
  });

  it('lets an agent saved before the rules edit other fields; a change of its tier or list is checked', async () => {
    // A worker listing a sub-agent, as stored before the tier rules existed.
    const legacy = await env.db.agent.create({
      data: {
        id: newId(),
        tenantId,
        name: 'legacy',
        tier: 'worker',
        model: 'scripted/echo',
        allowedSubagents: ['researcher'],
      },
    });
    expect((await api.patch(`/v1/agents/${legacy.id}`, { instructions: 'still here' })).status).toBe(200);
    expect((await api.patch(`/v1/agents/${legacy.id}`, { tier: 'reasoning' })).status).toBe(200);
    const bad = await api.patch(`/v1/agents/${legacy.id}`, { allowedSubagents: ['planner'] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.issues[0].path).toBe('allowedSubagents.0');
  });

  it('accepts the product’s worker-registered tools (sub-agent, memory) by name', async () => {
    const r = await create({ name: 'spawner', tools: ['spawn_subagent', 'memory_search', 'word_count'] });
    expect(r.tools).toEqual(['spawn_subagent', 'memory_search', 'word_count']);
    expect((await api.post('/v1/agents', { name: 'bad', tools: ['rm_rf'] })).status).toBe(400);
  });
});
