import { randomBytes } from 'node:crypto';
import { newId } from '@switchboard/contracts';
import { setContentCipher } from '@switchboard/database';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import { createTestEnv, seedTenant, type TestEnv } from '@switchboard/testing';
import { importSession, type SessionImport } from './session-import';

/** `importSession` on real Postgres: the seeded session, its ended first turn, and retries. */
jest.setTimeout(120_000);

describe('importSession', () => {
  let env: TestEnv;
  let tenantId: string;
  let agentId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    ({ tenantId, agentId } = await seedTenant(env.db, 'session-import'));
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const operator = (change: Partial<SessionImport>): SessionImport => ({
    sessionId: newId(),
    tenantId,
    agentId,
    metadata: { createdBy: 'test' },
    history: [],
    kind: 'operator_prompt',
    origin: { kind: 'operator' },
    deliverySurface: 'http_public_enqueue',
    admissionContext: 'control_authenticated',
    messageMetadata: { imported: 'test' },
    ...change,
  });

  it('seeds the history as an ended first turn, each message with the envelope admission derives', async () => {
    const s = operator({
      history: [
        { role: 'user', text: 'one' },
        { role: 'assistant', text: 'two' },
        { role: 'user', text: 'three' },
      ],
    });
    expect(await importSession(env.db, s)).toBe('created');

    const session = await env.db.session.findUniqueOrThrow({ where: { id: s.sessionId } });
    expect(session).toMatchObject({ tenantId, agentId, lastTurnSeq: 1, metadata: { createdBy: 'test' } });
    const turns = await env.db.turn.findMany({ where: { sessionId: s.sessionId } });
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ seq: 1, status: 'completed', stopReason: 'imported', finalText: 'two' });
    const messages = await env.db.message.findMany({
      where: { sessionId: s.sessionId },
      orderBy: { position: 'asc' },
    });
    expect(messages.map((m) => [m.role, m.body])).toEqual([
      ['user', { type: 'text', text: 'one' }],
      ['assistant', { type: 'text', text: 'two' }],
      ['user', { type: 'text', text: 'three' }],
    ]);
    expect(turns[0].inputMessageId).toBe(messages[0].id);
    for (const m of messages) {
      expect(m).toMatchObject({
        turnId: turns[0].id,
        turnSeq: 1,
        kind: 'operator_prompt',
        origin: { kind: 'operator' },
        trust: 'trusted_operator',
        authorityClass: 'operator_instruction',
        deliverySurface: 'http_public_enqueue',
        admissionContext: 'control_authenticated',
        metadata: { imported: 'test' },
      });
    }
  });

  it('without a history creates the session alone, at turn seq 0', async () => {
    const s = operator({});
    expect(await importSession(env.db, s)).toBe('created');
    expect(await env.db.session.findUniqueOrThrow({ where: { id: s.sessionId } })).toMatchObject({
      lastTurnSeq: 0,
    });
    expect(await env.db.turn.count({ where: { sessionId: s.sessionId } })).toBe(0);
  });

  it('a retry with the same id finds the session and seeds nothing twice', async () => {
    const s = operator({ history: [{ role: 'user', text: 'once' }] });
    expect(await importSession(env.db, s)).toBe('created');
    expect(await importSession(env.db, s)).toBe('exists');
    expect(await env.db.message.count({ where: { sessionId: s.sessionId } })).toBe(1);
    expect(await env.db.turn.count({ where: { sessionId: s.sessionId } })).toBe(1);
  });

  it("the same id for another agent, or another tenant's session, writes nothing", async () => {
    const other = await env.db.agent.create({
      data: { id: newId(), tenantId, name: 'b', model: 'scripted/echo' },
    });
    const s = operator({ history: [{ role: 'user', text: 'first' }] });
    expect(await importSession(env.db, s)).toBe('created');
    expect(await importSession(env.db, { ...s, agentId: other.id })).toBe('other_agent');

    const elsewhere = await seedTenant(env.db, 'elsewhere');
    expect(
      await importSession(env.db, { ...s, tenantId: elsewhere.tenantId, agentId: elsewhere.agentId }),
    ).toBe('other_agent');
    expect(await env.db.message.count({ where: { sessionId: s.sessionId } })).toBe(1);
  });

  it('a stopped agent or a paused tenant gets nothing: refused before anything is written', async () => {
    const stopped = await env.db.agent.create({
      data: { id: newId(), tenantId, name: 'stopped', model: 'scripted/echo', lifecycle: 'stopped' },
    });
    const s = operator({ agentId: stopped.id, history: [{ role: 'user', text: 'earlier' }] });
    await expect(importSession(env.db, s)).rejects.toMatchObject({ code: 'agent_stopped' });
    expect(await env.db.session.count({ where: { agentId: stopped.id } })).toBe(0);
    expect(await env.db.message.count({ where: { agentId: stopped.id } })).toBe(0);

    const paused = await seedTenant(env.db, 'paused');
    await env.db.tenant.update({ where: { id: paused.tenantId }, data: { killSwitch: true } });
    const p = operator({ tenantId: paused.tenantId, agentId: paused.agentId });
    await expect(importSession(env.db, p)).rejects.toMatchObject({ code: 'tenant_paused' });
    expect(await env.db.session.count({ where: { tenantId: paused.tenantId } })).toBe(0);
  });

  it('seals the imported history and final text for an encrypting tenant (docs/adr/0067)', async () => {
    const t = await seedTenant(env.db, 'session-import-sealed');
    await env.db.tenant.update({
      where: { id: t.tenantId },
      data: { settings: { encryption: { mode: 'on' } } },
    });
    const cipher = new TenantCipher(
      env.db,
      LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`),
    );
    setContentCipher(cipher);
    try {
      const s = operator({
        tenantId: t.tenantId,
        agentId: t.agentId,
        history: [
          { role: 'user', text: 'Where do the wombats sleep?' },
          { role: 'assistant', text: 'In the cedar burrow.' },
        ],
      });
      expect(await importSession(env.db, s)).toBe('created');
      const messages = await env.db.message.findMany({
        where: { sessionId: s.sessionId },
        orderBy: { position: 'asc' },
      });
      for (const m of messages) expect(m.body).toEqual(expect.stringMatching(/^sbe1\.j\./));
      expect(
        await cipher.openDeep(
          t.tenantId,
          messages.map((m) => m.body),
        ),
      ).toEqual([
        { type: 'text', text: 'Where do the wombats sleep?' },
        { type: 'text', text: 'In the cedar burrow.' },
      ]);
      const [turn] = await env.db.turn.findMany({ where: { sessionId: s.sessionId } });
      expect(turn.finalText).toMatch(/^sbe1\.t\./);
      expect(await cipher.open(t.tenantId, turn.finalText)).toBe('In the cedar burrow.');
    } finally {
      setContentCipher(undefined);
    }
  });
});
