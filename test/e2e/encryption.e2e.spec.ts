import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createTestEnv,
  FakeLlmServer,
  ROOT,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
/**
 * Sent as the message, answered back, fetched by the tool: made of words no other text of the test
 * (or of Postgres' catalog) holds, so a `pg_dump` that contains any of them leaked content. The tenant
 * runs in strict mode, so no tsvector lexeme of it is kept either (docs/adr/0067).
 */
const SECRET = 'Zephyrine quokkas juggle ultramarine xylophones';
const SECRET_WORDS = ['Zephyrine', 'quokkas', 'ultramarine', 'xylophones'];
const TOOL_SECRET = 'Vermilion axolotls';
/** Memory text (a record and a block): sealed too (docs/adr/0067). */
const MEMORY_SECRET = 'Periwinkle narwhals';
const BLOCK_SECRET = 'Chartreuse pangolins';
const K1 = randomBytes(32).toString('base64');
/**
 * What the writers outside admission and the checkpoint store (docs/adr/0067): an approval's
 * arguments and the reason given, a client tool's arguments and answer, a cancel's note, a
 * sub-agent's task, its question, the answer and its handback — each a pair of words nothing else holds.
 */
const MARKS = {
  approvalArg: 'Gamboge tapirs',
  reason: 'Cinnabar okapis',
  clientArg: 'Viridian dugongs',
  clientAnswer: 'Fuchsia tarsiers',
  cancelArg: 'Heliotrope quolls',
  cancelNote: 'Sepia gharials',
  task: 'Celadon binturongs',
  question: 'Aureolin saigas',
  answer: 'Smaragdine jerboas',
  handback: 'Glaucous kinkajous',
};
const LOOKUP = {
  type: 'function',
  function: {
    name: 'lookup_fact',
    description: 'Looks a fact up on the client',
    parameters: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
  },
};

// First: an in-process gateway with a key provider sets the process' content cipher (docs/adr/0067).
describe('encryption without a key provider', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config());
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  it('refuses on and strict with a 400, and rotation too, changing nothing', async () => {
    const { api, tenantId } = await newTenant(gateway.url, ADMIN);
    const before = await api.get('/v1/settings');
    expect(before.body.encryption).toEqual({ mode: 'off', available: false });
    for (const mode of ['on', 'strict']) {
      const r = await api.patch('/v1/settings', { encryption: { mode } });
      expect(r.status).toBe(400);
      expect(r.body.error.message).toMatch(/needs a key provider/);
      const op = await new Api(gateway.url, ADMIN).patch(`/v1/admin/tenants/${tenantId}`, {
        encryption: { mode },
      });
      expect(op.status).toBe(400);
    }
    expect((await api.get('/v1/settings')).body).toEqual(before.body);
    const rotate = await new Api(gateway.url, ADMIN).post(`/v1/admin/tenants/${tenantId}/data-keys/rotate`);
    expect(rotate.status).toBe(400);
    expect(await env.db.tenantDataKey.count()).toBe(0);
    // Off stays settable.
    expect((await api.patch('/v1/settings', { encryption: { mode: 'off' } })).status).toBe(200);
  });
});

/**
 * Encryption at rest through real processes (docs/adr/0067): a gateway and a harness worker with a
 * local key ring; a strict tenant's turn with a tool call runs end to end (the model gets the
 * plaintext, the API answers it), while the database holds only sealed values — a `pg_dump` of it
 * grepped for the sent words finds none. Then rotation, and bad input (an unknown mode, a mode
 * without a key provider, rotation without one): 400 and nothing changed.
 */
describe('encryption at rest', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let harness: AppProcess;
  let site: Server;
  let siteUrl: string;
  let api: Api;
  let tenantId: string;
  let agentId: string;
  const admin = () => new Api(gateway.url, ADMIN);

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    site = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`The page says: ${TOOL_SECRET} sing at dawn.`);
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://localhost:${(site.address() as AddressInfo).port}/page`;
    const settings = {
      ...llm.providerEnv,
      HTTP_FETCH_ALLOW_HOSTS: 'localhost',
      ENCRYPTION_KEYS: `k1:${K1}`,
    };
    gateway = await startGateway(env.config(settings));
    harness = await spawnApp('harness-worker', env.processEnv(settings));
    ({ api, tenantId } = await newTenant(gateway.url, ADMIN));
    const agent = await api.post('/v1/agents', {
      name: 'sealed',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['http_fetch'],
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  });

  afterAll(async () => {
    await harness?.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    site?.closeAllConnections();
    await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
    await env?.cleanup();
  });

  async function turn(content: string, answer: string) {
    llm.enqueue(scripted.toolCall('http_fetch', { url: siteUrl }, { id: 'call_f' }), scripted.text(answer));
    const session = (await api.post('/v1/sessions', { agentId })).body.id as string;
    const admitted = await api.post(`/v1/sessions/${session}/messages`, { content });
    expect(admitted.status).toBe(202);
    const ended = await waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${admitted.body.turnId}`);
        return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
      },
      { what: 'the turn ended', timeoutMs: 60_000 },
    );
    return { session, turnId: admitted.body.turnId as string, ended };
  }

  it('refuses an unknown mode with a 400 and changes nothing', async () => {
    const before = await api.get('/v1/settings');
    expect(before.body.encryption).toEqual({ mode: 'off', available: true });
    const bad = await api.patch('/v1/settings', { encryption: { mode: 'paranoid' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
    expect((await api.get('/v1/settings')).body).toEqual(before.body);
  });

  it("runs a strict tenant's turn with a tool call end to end, and keeps no plaintext in the database", async () => {
    const set = await api.patch('/v1/settings', { encryption: { mode: 'strict' } });
    expect(set.status).toBe(200);
    expect(set.body.encryption).toEqual({ mode: 'strict', available: true });

    const before = llm.requests.length;
    const { session, turnId, ended } = await turn(SECRET, `You said: ${SECRET}`);
    expect(ended.status).toBe('completed');
    // The reads answer plaintext.
    expect(ended.finalText).toBe(`You said: ${SECRET}`);
    const messages = (await api.get(`/v1/sessions/${session}/messages`)).body.data as {
      role: string;
      content: unknown;
    }[];
    expect(JSON.stringify(messages)).toContain(SECRET);
    expect(JSON.stringify(messages)).toContain(TOOL_SECRET);
    expect(ended.toolCalls).toEqual([expect.objectContaining({ name: 'http_fetch', status: 'completed' })]);
    // The model got the plaintext: the worker opened the transcript it read back.
    const sent = JSON.stringify(llm.requests.slice(before).map((r) => r.body));
    expect(sent).toContain(SECRET);
    expect(sent).toContain(TOOL_SECRET);

    // Stored sealed: the raw rows (read without the cipher) hold sealed values only.
    const raw = await env.db.message.findMany({ where: { sessionId: session } });
    expect(raw.length).toBeGreaterThanOrEqual(3);
    for (const m of raw) expect(m.body).toEqual(expect.stringMatching(/^sbe1\.j\.1\./));
    const rawTurn = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
    expect(rawTurn.finalText).toMatch(/^sbe1\.t\.1\./);
    const rawCall = await env.db.toolCall.findFirstOrThrow({ where: { turnId } });
    expect(rawCall.arguments).toEqual(expect.stringMatching(/^sbe1\./));
    expect(rawCall.result).toEqual(expect.stringMatching(/^sbe1\./));

    // Memory text: a record and a block, read back in clear, stored sealed.
    const added = await api.post(`/v1/agents/${agentId}/memory`, { title: 'Pets', content: MEMORY_SECRET });
    expect(added.status).toBe(201);
    expect(added.body.content).toBe(MEMORY_SECRET);
    const listed = await api.get(`/v1/agents/${agentId}/memory`);
    expect(JSON.stringify(listed.body)).toContain(MEMORY_SECRET);
    const block = await api.put(`/v1/agents/${agentId}/blocks/persona`, { content: BLOCK_SECRET });
    expect(block.status).toBe(200);
    expect((await api.get(`/v1/agents/${agentId}/blocks/persona`)).body.content).toBe(BLOCK_SECRET);

    // A dump of the whole database holds none of the words sent, answered or fetched.
    const dump = execFileSync('pg_dump', ['--no-owner', '--data-only', env.databaseUrl], {
      maxBuffer: 512 * 1024 * 1024,
    }).toString('utf8');
    expect(dump).toContain('sbe1.');
    for (const word of [
      ...SECRET_WORDS,
      'Vermilion',
      'axolotls',
      'Periwinkle',
      'narwhals',
      'Chartreuse',
      'pangolins',
    ]) {
      expect({ word, found: dump.toLowerCase().includes(word.toLowerCase()) }).toEqual({
        word,
        found: false,
      });
    }
  });

  it('seals what approvals, client tools, cancels, sub-agent tasks and forks write; the API reads it in clear', async () => {
    expect((await api.get('/v1/settings')).body.encryption.mode).toBe('strict');
    const turnStatus = (turnId: string, is: string[]) =>
      waitFor(
        async () => {
          const r = await api.get(`/v1/turns/${turnId}`);
          return is.includes(r.body.status) ? r.body : undefined;
        },
        { what: `turn ${turnId} ${is.join('|')}`, timeoutMs: 60_000 },
      );

    // An approval: the gated call's arguments (the approval row) and the reason a person gave.
    const gated = await api.post('/v1/agents', {
      name: 'gated',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['http_fetch'],
      approvalRequired: ['http_fetch'],
    });
    expect(gated.status).toBe(201);
    llm.enqueue(
      scripted.toolCall('http_fetch', { url: `${siteUrl}?about=${encodeURIComponent(MARKS.approvalArg)}` }),
      scripted.text('Fetched.'),
    );
    const gatedSession = (await api.post('/v1/sessions', { agentId: gated.body.id })).body.id as string;
    const gatedTurn = (await api.post(`/v1/sessions/${gatedSession}/messages`, { content: 'fetch it' })).body
      .turnId as string;
    await turnStatus(gatedTurn, ['awaiting_approval']);
    const pending = (await api.get('/v1/approvals?status=pending')).body.data as {
      id: string;
      turnId: string;
    }[];
    const approval = pending.find((a) => a.turnId === gatedTurn)!;
    expect(JSON.stringify((await api.get(`/v1/approvals/${approval.id}`)).body)).toContain(
      encodeURIComponent(MARKS.approvalArg),
    );
    const decided = await api.post(`/v1/approvals/${approval.id}`, {
      decision: 'approve',
      reason: MARKS.reason,
    });
    expect(decided.status).toBeLessThan(300);
    expect((await turnStatus(gatedTurn, ['completed', 'failed'])).status).toBe('completed');
    expect((await api.get(`/v1/approvals/${approval.id}`)).body.reason).toBe(MARKS.reason);
    const gatedEvents = JSON.stringify((await api.get(`/v1/sessions/${gatedSession}/events`)).body);
    expect(gatedEvents).toContain(MARKS.reason);

    // A client tool: its arguments and the client's answer (the approval row's output).
    llm.enqueue(scripted.toolCall('lookup_fact', { topic: MARKS.clientArg }), scripted.text('Looked up.'));
    const asked = await api.post('/v1/chat/completions', {
      model: 'sealed',
      messages: [{ role: 'user', content: 'look it up' }],
      tools: [LOOKUP],
    });
    expect(asked.status).toBe(200);
    const [clientCall] = asked.body.choices[0].message.tool_calls;
    expect(clientCall.function.arguments).toContain(MARKS.clientArg);
    const clientTurn = asked.body.turn_id as string;
    const answered = await api.post(`/v1/turns/${clientTurn}/client-tool-results`, {
      results: [{ callId: clientCall.id, output: MARKS.clientAnswer }],
    });
    expect(answered.status).toBe(202);
    expect((await turnStatus(clientTurn, ['completed', 'failed'])).status).toBe('completed');
    const clientSession = asked.body.session_id as string;
    expect(JSON.stringify((await api.get(`/v1/sessions/${clientSession}/messages`)).body)).toContain(
      MARKS.clientAnswer,
    );

    // A cancel with a note of a turn waiting on its client: the note, and the unrun call's arguments.
    llm.enqueue(scripted.toolCall('lookup_fact', { topic: MARKS.cancelArg }));
    const waiting = await api.post('/v1/chat/completions', {
      model: 'sealed',
      messages: [{ role: 'user', content: 'look that up' }],
      tools: [LOOKUP],
    });
    expect(waiting.status).toBe(200);
    const waitingTurn = waiting.body.turn_id as string;
    const cancelled = await api.post(`/v1/turns/${waitingTurn}/cancel`, { reason: MARKS.cancelNote });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect(JSON.stringify(cancelled.body)).toContain(MARKS.cancelNote);
    const cancelEvents = JSON.stringify(
      (await api.get(`/v1/sessions/${waiting.body.session_id}/events`)).body,
    );
    expect(cancelEvents).toContain(MARKS.cancelNote);

    // A sub-agent: the task, the child's question, the answer through the API and the handback.
    const helper = 'sealed-helper';
    const boss = 'sealed-boss';
    llm.setDefault((req) => {
      const body = JSON.stringify(req.body);
      const results = ((req.body as { messages?: { role: string }[] }).messages ?? []).filter(
        (m) => m.role === 'tool',
      ).length;
      if (body.includes(`You are the agent \\"${helper}\\"`))
        return results === 0
          ? scripted.toolCall(
              'ask_user',
              { question: MARKS.question, options: ['yes', 'no'] },
              { id: 'call_ask' },
            )
          : scripted.text(MARKS.handback);
      return results === 0
        ? scripted.toolCall('spawn_subagent', { agent: helper, task: MARKS.task, blocking: true })
        : scripted.text('Relayed.');
    });
    try {
      expect(
        (await api.post('/v1/agents', { name: helper, tier: 'worker', model: 'openai-chat/gpt-4o-mini' }))
          .status,
      ).toBe(201);
      const bossAgent = await api.post('/v1/agents', {
        name: boss,
        tier: 'chat',
        model: 'openai-chat/gpt-4o-mini',
        tools: ['spawn_subagent'],
      });
      expect(bossAgent.status).toBe(201);
      const bossSession = (await api.post('/v1/sessions', { agentId: bossAgent.body.id })).body.id as string;
      const bossTurn = (await api.post(`/v1/sessions/${bossSession}/messages`, { content: 'delegate' })).body
        .turnId as string;
      const parent = await turnStatus(bossTurn, ['completed', 'failed']);
      expect(parent.status).toBe('completed');
      const taskId = parent.children[0].id as string;
      const asking = (await api.get(`/v1/tasks/${taskId}`)).body;
      expect(asking.handback).toMatchObject({ status: 'awaiting_user', question: MARKS.question });
      expect(asking.input).toEqual({ task: MARKS.task });
      const childMessages = JSON.stringify(
        (await api.get(`/v1/sessions/${asking.childSessionId}/messages`)).body,
      );
      expect(childMessages).toContain(MARKS.task);
      expect((await api.post(`/v1/tasks/${taskId}/answer`, { answer: MARKS.answer })).status).toBe(200);
      const done = await waitFor(
        async () => {
          const r = await api.get(`/v1/tasks/${taskId}`);
          return r.body.status === 'completed' ? r.body : undefined;
        },
        { what: 'the child completed after the answer', timeoutMs: 60_000 },
      );
      expect(done.handback).toEqual({ status: 'completed', result: MARKS.handback });
      expect(done.output).toBe(MARKS.handback);
      expect(done.input).toEqual({ task: MARKS.task, answers: { call_ask: MARKS.answer } });
      const reports = await waitFor(
        async () => {
          const r = (await api.get(`/v1/sessions/${bossSession}/events`)).body.data as {
            type: string;
            data: { status: string };
          }[];
          const done = r.filter((e) => e.type === 'subagent_completed');
          return done.length >= 2 ? done : undefined;
        },
        { what: "the parent's second subagent_completed", timeoutMs: 30_000 },
      );
      expect(JSON.stringify(reports)).toContain(MARKS.question);
      expect(JSON.stringify(reports)).toContain(MARKS.handback);
    } finally {
      llm.setDefault(undefined);
    }

    // A fork of the approval's session: the copied transcript reads in clear.
    const fork = await api.post(`/v1/sessions/${gatedSession}/fork`, { turnId: gatedTurn });
    expect(fork.status).toBe(201);
    const forked = JSON.stringify((await api.get(`/v1/sessions/${fork.body.session.id}/messages`)).body);
    expect(forked).toContain(TOOL_SECRET);
    expect(forked).toContain(encodeURIComponent(MARKS.approvalArg));

    // Nothing still running that could write later.
    await waitFor(
      async () =>
        (await env.db.turn.count({ where: { tenantId, status: { in: ['queued', 'running'] } } })) === 0 ||
        undefined,
      { what: 'every turn of the tenant settled', timeoutMs: 30_000 },
    );
    const dump = execFileSync('pg_dump', ['--no-owner', '--data-only', env.databaseUrl], {
      maxBuffer: 512 * 1024 * 1024,
    })
      .toString('utf8')
      .toLowerCase();
    const words = Object.values(MARKS).flatMap((m) => m.toLowerCase().split(' '));
    expect(words.filter((w) => dump.includes(w))).toEqual([]);
  });

  it("answers a strict tenant's `wait` in clear, byte for byte what GET /v1/turns/:id answers (docs/adr/0071)", async () => {
    expect((await api.patch('/v1/settings', { encryption: { mode: 'strict' } })).status).toBe(200);
    llm.enqueue(
      scripted.toolCall('http_fetch', { url: siteUrl }, { id: 'call_w' }),
      scripted.text(`Waited: ${SECRET}`),
    );
    const session = (await api.post('/v1/sessions', { agentId })).body.id as string;
    const waited = await api.post(`/v1/sessions/${session}/messages`, { content: SECRET, wait: true });
    expect(waited.status).toBe(200);
    // The end event carried the turn opened (the live channel is transient; docs/adr/0071).
    expect(waited.body).toMatchObject({ status: 'completed', finalText: `Waited: ${SECRET}` });
    expect(JSON.stringify(waited.body.toolCalls)).toContain('Vermilion');
    const read = await api.get(`/v1/turns/${waited.body.id}`);
    expect(JSON.stringify(waited.body)).toBe(JSON.stringify(read.body));
  });

  it("exports a sealed tenant's content opened, without its data keys (docs/adr/0068)", async () => {
    const { ended } = await turn(`Export this: ${SECRET}`, 'Exported.');
    expect(ended.status).toBe('completed');
    const res = await fetch(`${gateway.url}/v1/admin/tenants/${tenantId}/export`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(res.status).toBe(200);
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; table?: string; tables?: { name: string }[] });
    expect(lines[0].kind).toBe('manifest');
    expect(lines.at(-1)?.kind).toBe('end');
    const archive = JSON.stringify(lines);
    expect(archive).toContain(SECRET);
    expect(archive).toContain(TOOL_SECRET);
    expect(archive).not.toContain('sbe1.');
    expect(lines[0].tables?.map((t) => t.name)).not.toContain('tenant_data_keys');
    expect(lines.filter((l) => l.table === 'tenant_data_keys')).toEqual([]);
  });

  it('rotates the data key: new content under v2, older content still read, audited', async () => {
    const listed = await admin().get(`/v1/admin/tenants/${tenantId}/data-keys`);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({
      tenantId,
      mode: 'strict',
      data: [{ version: 1, state: 'active', provider: 'local', kekId: 'k1' }],
    });
    expect(JSON.stringify(listed.body)).not.toMatch(/wrapped/i);

    const rotated = await admin().post(`/v1/admin/tenants/${tenantId}/data-keys/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.map((k: { version: number; state: string }) => [k.version, k.state])).toEqual([
      [2, 'active'],
      [1, 'retired'],
    ]);
    const audit = await admin().get(
      `/v1/admin/audit-events?tenantId=${tenantId}&action=tenant.data_key_rotated`,
    );
    expect(audit.body.data).toEqual([
      expect.objectContaining({
        actor: 'operator',
        action: 'tenant.data_key_rotated',
        details: expect.objectContaining({ version: 2, previous: 1 }),
      }),
    ]);

    const { session, ended } = await turn('after rotation', 'rotated fine');
    expect(ended.finalText).toBe('rotated fine');
    const raw = await env.db.message.findMany({ where: { sessionId: session, role: 'user' } });
    expect(raw[0].body).toEqual(expect.stringMatching(/^sbe1\.j\.2\./));
    // The first turn's content (v1) still reads.
    const first = await env.db.message.findFirstOrThrow({
      where: { tenantId, body: { not: raw[0].body! } },
      orderBy: { createdAt: 'asc' },
    });
    const read = await api.get(`/v1/sessions/${first.sessionId}/messages`);
    expect(JSON.stringify(read.body)).toContain(SECRET);
  });

  it('KEK rotation (admin CLI) re-wraps every data key under the new KEK at once (audited); a process with only the new KEK makes new versions', async () => {
    const cli = (keys: string | undefined, ...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          ['-r', '@swc-node/register', path.join('scripts', 'admin.ts'), ...args],
          { cwd: ROOT, env: env.processEnv(keys ? { ENCRYPTION_KEYS: keys } : {}), timeout: 90_000 },
          (err, stdout, stderr) =>
            resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
        );
      });
    const none = await cli(undefined, 'rewrap-data-keys');
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no key provider/);
    expect(
      (await env.db.tenantDataKey.findMany({ where: { tenantId } })).every((k) => k.kekId === 'k1'),
    ).toBe(true);

    const k2 = randomBytes(32).toString('base64');
    const r = await cli(`k2:${k2},k1:${K1}`, 'rewrap-data-keys');
    expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(r.stdout)).toEqual({ rewrapped: 2, unchanged: 0 });
    const rows = await env.db.tenantDataKey.findMany({ where: { tenantId } });
    expect(rows.map((k) => k.kekId)).toEqual(['k2', 'k2']);
    const audit = await admin().get(
      `/v1/admin/audit-events?tenantId=${tenantId}&action=tenant.data_key_rotated`,
    );
    expect(audit.body.data[0].details).toMatchObject({ kind: 'kek', kekId: 'k2', versions: [1, 2] });
    // A process holding only the new KEK opens both versions: a new data key made by the CLI with k2 alone.
    const v3 = await cli(`k2:${k2}`, 'rotate-data-key', tenantId);
    expect(JSON.parse(v3.stdout)).toEqual({ version: 3, previous: 2 });
  });

  it('answers 404 for an unknown or malformed tenant id and 401 for a tenant key, changing nothing', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await admin().get(`/v1/admin/tenants/${unknown}/data-keys`)).status).toBe(404);
    expect((await admin().post(`/v1/admin/tenants/${unknown}/data-keys/rotate`)).status).toBe(404);
    // A malformed id is a tenant that does not exist (pathId): 404 as everywhere.
    expect((await admin().post(`/v1/admin/tenants/not-a-uuid/data-keys/rotate`)).status).toBe(404);
    expect(await env.db.tenantDataKey.count({ where: { tenantId: unknown } })).toBe(0);
    // A tenant key is not the operator's.
    expect((await api.post(`/v1/admin/tenants/${tenantId}/data-keys/rotate`)).status).toBe(401);
    expect(await env.db.tenantDataKey.count({ where: { tenantId } })).toBe(3);
  });
});
