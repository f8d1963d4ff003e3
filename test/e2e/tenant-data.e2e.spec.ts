import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { Client, Pool } from 'pg';
import { Jobs, QueueName } from '@switchboard/contracts';
import { createPrisma, poolOf, type Db } from '@switchboard/database';
import { createRedis, publish } from '@switchboard/queue';
import { ownRows, tenantRowsLeft, tenantTables, type TenantTable } from '@switchboard/store';
import {
  createTestEnv,
  freePort,
  runProcess,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import { adminDatabaseUrl, withDatabase } from '../../libs/testing/src/services';
import { markerId } from '../../libs/tokenjuice/src/marker';
import { Api, newTenant, type ApiResponse } from '../support/api';
import { TEST_LOG, TOKENJUICE_TOOLS_MODULE } from '../support/tokenjuice-tools';
import { FIXTURES, startStack } from '../support/stack';

jest.setTimeout(300_000);

const ADMIN = 'test-admin-token-0123456789';
const UNKNOWN_ID = '01a20360-0000-7000-8000-000000000000';
const ROOT = path.resolve(__dirname, '../..');
// The source deployment's KEK and another deployment's (the import's target).
const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64');

/** Every row of the tenant in every table of the catalog, as Postgres' own JSON text, in key order. */
async function snapshot(
  pool: Pool,
  tenantId: string,
  tables: TenantTable[],
): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const t of tables) {
    const key = t.key.map((k) => `r."${k}"`).join(', ');
    const { rows } = await pool.query<{ j: string }>(
      `SELECT to_jsonb(r)::text AS j FROM "${t.name}" r WHERE ${ownRows(t)} ORDER BY ${key}`,
      [tenantId],
    );
    out[t.name] = rows.map((r) => r.j);
  }
  return out;
}

/** Every path inside `value` (a column, then JSON keys and indexes) that holds a sealed string. */
function sealedPaths(value: unknown, at: string, out: string[]): string[] {
  if (typeof value === 'string') {
    if (value.startsWith('sbe1.')) out.push(at);
  } else if (Array.isArray(value)) value.forEach((v, i) => sealedPaths(v, `${at}[${i}]`, out));
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) sealedPaths(v, `${at}.${k}`, out);
  return out;
}

/**
 * Where two snapshots of the same rows differ in what is sealed: `table#row path` sealed in one and
 * not the other (the data keys left out: each deployment has its own).
 */
function sealedPathsDiffer(a: Record<string, string[]>, b: Record<string, string[]>): string[] {
  const differ: string[] = [];
  for (const table of Object.keys(a)) {
    if (table === 'tenant_data_keys') continue;
    expect([table, b[table]?.length]).toEqual([table, a[table].length]);
    a[table].forEach((row, i) => {
      const left = sealedPaths(JSON.parse(row), '', []);
      const right = new Set(sealedPaths(JSON.parse(b[table][i]), '', []));
      for (const p of left) if (!right.delete(p)) differ.push(`${table}#${i}${p}: sealed in the source only`);
      for (const p of right) differ.push(`${table}#${i}${p}: sealed in the import only`);
    });
  }
  return differ;
}

const lines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map(
      (l) =>
        JSON.parse(l) as { kind: string; table?: string; row?: Record<string, unknown>; cursor?: string },
    );

/**
 * Export, import, deletion and retention of a tenant's data (docs/adr/0068) through the real gateway
 * and workers: an archive of a tenant with real turns, memory, work items and tool-result originals
 * imported into a fresh migrated database equal table by table; resuming after a checkpoint; the
 * deletion leaving no row of the tenant in any table or partition while another tenant's turns run;
 * retention purging only what is due with usage unchanged; bad input refused with nothing changed.
 */
describe('tenant data: export, import, deletion, retention', () => {
  let env: TestEnv;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let admin: Api;
  let redis: IORedis;
  const dir = mkdtempSync(path.join(tmpdir(), 'sb-tenant-data-'));

  beforeAll(async () => {
    env = await createTestEnv();
    stack = await startStack(
      env.config({
        SCRIPTED_FIXTURES_DIR: FIXTURES,
        EXTRA_TOOL_MODULES: TOKENJUICE_TOOLS_MODULE,
        RETENTION_INTERVAL_MS: '300',
        // A key ring: the encrypted round trip's source tenant seals (the others are mode off).
        ENCRYPTION_KEYS: `k1:${K1}`,
      }),
    );
    admin = new Api(stack.url, ADMIN);
    redis = createRedis(env.redisUrl);
  });

  afterAll(async () => {
    await stack?.close();
    redis?.disconnect();
    await env?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const expectError = (res: ApiResponse, status: number, code: string) =>
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });

  /** A tenant with sessions and real turns (one compacting a tool result: an original), memory and work. */
  async function populatedTenant(name: string, encryption?: 'on' | 'strict') {
    const t = await newTenant(stack.url, ADMIN, name);
    const { api } = t;
    if (encryption)
      expect((await api.patch('/v1/settings', { encryption: { mode: encryption } })).status).toBe(200);
    const echo = await api.post('/v1/agents', { name: 'echo', model: 'scripted/echo' });
    const session = (await api.post('/v1/sessions', { agentId: echo.body.id })).body.id as string;
    for (const content of ['hello', 'again']) {
      const turn = await api.post(`/v1/sessions/${session}/messages`, { content, wait: true });
      expect(turn.body.status).toBe('completed');
    }
    const tj = await api.post('/v1/agents', {
      name: 'tj',
      model: 'scripted/tokenjuice-retrieve',
      tools: ['run_tests'],
    });
    const tjSession = (await api.post('/v1/sessions', { agentId: tj.body.id })).body.id as string;
    const compacted = await api.post(`/v1/sessions/${tjSession}/messages`, {
      content: `tj:${markerId(TEST_LOG)}`,
      wait: true,
    });
    expect(compacted.body.status).toBe('completed');
    expect(
      (await api.post(`/v1/agents/${echo.body.id}/memory`, { content: 'The user likes tea.' })).status,
    ).toBe(201);
    expect((await api.put(`/v1/agents/${echo.body.id}/blocks/human`, { content: 'Name: Ada.' })).status).toBe(
      200,
    );
    expect(
      (await api.put(`/v1/agents/${echo.body.id}/blocks/human`, { content: 'Name: Ada L.' })).status,
    ).toBe(200);
    expect((await api.post(`/v1/agents/${echo.body.id}/work-items`, { objective: 'later' })).status).toBe(
      201,
    );
    return { ...t, agentId: echo.body.id as string, sessionId: session };
  }

  /**
   * What the writers with their own SQL store (docs/adr/0067, part A): an approval decided with a
   * reason, a turn waiting on an approval cancelled with a note (its approval's fixed reason and its
   * unrun call), a dataset item and a feedback comment.
   */
  async function writersWithTheirOwnSql(api: Api) {
    const turnIn = (turnId: string, is: string[]) =>
      waitFor(
        async () => {
          const r = await api.get(`/v1/turns/${turnId}`);
          return is.includes(r.body.status) ? r.body : undefined;
        },
        { what: `turn ${turnId} ${is.join('|')}`, timeoutMs: 60_000 },
      );
    const gated = await api.post('/v1/agents', {
      name: 'gated',
      model: 'scripted/tokenjuice-retrieve',
      tools: ['run_tests'],
      approvalRequired: ['run_tests'],
    });
    expect(gated.status).toBe(201);
    const session = (await api.post('/v1/sessions', { agentId: gated.body.id })).body.id as string;
    const waiting = async () => {
      const m = await api.post(`/v1/sessions/${session}/messages`, { content: `tj:${markerId(TEST_LOG)}` });
      expect(m.status).toBe(202);
      const turnId = m.body.turnId as string;
      await turnIn(turnId, ['awaiting_approval']);
      return turnId;
    };
    const approved = await waiting();
    const pending = (await api.get('/v1/approvals?status=pending')).body.data as {
      id: string;
      turnId: string;
    }[];
    const approval = pending.find((a) => a.turnId === approved)!;
    const decided = await api.post(`/v1/approvals/${approval.id}`, {
      decision: 'approve',
      reason: 'Looks safe to run.',
    });
    expect(decided.status).toBe(200);
    expect((await turnIn(approved, ['completed', 'failed'])).status).toBe('completed');
    const cancelled = await api.post(`/v1/turns/${await waiting()}/cancel`, { reason: 'Changed my mind.' });
    expect(cancelled.body.status).toBe('cancelled');
    expect(
      (
        await api.post(`/v1/turns/${approved}/feedback`, {
          rating: 'up',
          comment: 'Right answer.',
          by: 'reviewer',
        })
      ).status,
    ).toBe(201);
    // A sub-agent's task: its prompt and context, the child's handback and output.
    expect(
      (await api.post('/v1/agents', { name: 'helper', tier: 'worker', model: 'scripted/echo' })).status,
    ).toBe(201);
    const boss = await api.post('/v1/agents', {
      name: 'boss',
      tier: 'chat',
      model: 'scripted/delegate',
      tools: ['spawn_subagent'],
    });
    expect(boss.status).toBe(201);
    const bossSession = (await api.post('/v1/sessions', { agentId: boss.body.id })).body.id as string;
    const delegated = await api.post(`/v1/sessions/${bossSession}/messages`, { content: 'Brew the tea.' });
    const parent = await turnIn(delegated.body.turnId as string, ['completed', 'failed']);
    expect(parent.status).toBe('completed');
    const task = await waitFor(
      async () => {
        const r = await api.get(`/v1/tasks/${parent.children[0].id as string}`);
        return r.body.status === 'completed' ? r.body : undefined;
      },
      { what: 'the sub-agent task completed', timeoutMs: 60_000 },
    );
    expect(task.input).toEqual({ task: 'Brew the tea.', context: 'Asked by the import test.' });
    const dataset = await api.post('/v1/datasets', { name: 'sealed-set' });
    expect(dataset.status).toBe(201);
    const items = await api.post(`/v1/datasets/${dataset.body.id}/items`, {
      items: [{ input: 'What is tea?', expected: 'A drink.' }],
    });
    expect(items.status).toBe(201);
  }

  /** The tenant's rows once its post-turn hooks are done writing (two equal snapshots in a row). */
  async function quietSnapshot(tenantId: string, tables: TenantTable[]) {
    let source = await snapshot(poolOf(env.db), tenantId, tables);
    await waitFor(
      async () => {
        await new Promise((r) => setTimeout(r, 300));
        const now = await snapshot(poolOf(env.db), tenantId, tables);
        const same = JSON.stringify(now) === JSON.stringify(source);
        source = now;
        return same || undefined;
      },
      { what: 'the tenant quiet' },
    );
    return source;
  }

  /** A fresh database migrated with `prisma migrate deploy`: its URL, a pool, and its drop. */
  async function freshDatabase() {
    const name = `sb_import_${randomBytes(6).toString('hex')}`;
    const adminClient = new Client({ connectionString: adminDatabaseUrl() });
    await adminClient.connect();
    await adminClient.query(`CREATE DATABASE "${name}"`);
    const url = withDatabase(adminDatabaseUrl(), name);
    const pool = new Pool({ connectionString: url, max: 2 });
    // pool.end() resolves once its clients are told to end, not once they are gone: the DROP … FORCE
    // below may terminate one still closing (57P01), which the pool reports as an idle client's error.
    pool.on('error', (e: Error & { code?: string }) => {
      if (e.code !== '57P01') throw e;
    });
    const drop = async () => {
      await pool.end();
      await adminClient.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await adminClient.end();
    };
    const migrate = await runProcess(
      process.execPath,
      [require.resolve('prisma/build/index.js'), 'migrate', 'deploy'],
      {
        env: {
          ...process.env,
          DATABASE_URL: url,
          PRISMA_QUERY_ENGINE_LIBRARY: '/dev/null',
          CHECKPOINT_DISABLE: '1',
        },
      },
    );
    if (migrate.code !== 0) {
      await drop();
      throw new Error(`migrate deploy failed: ${migrate.stderr}`);
    }
    return { url, pool, drop };
  }

  /** The admin CLI against `url`, with these extra variables (e.g. a key ring). */
  const adminCli = (url: string, args: string[], extra: Record<string, string> = {}) =>
    runProcess(process.execPath, ['-r', '@swc-node/register', 'scripts/admin.ts', ...args], {
      cwd: ROOT,
      env: env.processEnv({ DATABASE_URL: url, ...extra }),
    });

  it('exports a tenant over HTTP and imports it into a fresh database, equal table by table; resumes after a checkpoint', async () => {
    const { api, tenantId, keyId } = await populatedTenant('exported');
    const other = await newTenant(stack.url, ADMIN, 'bystander');
    expect((await other.api.post('/v1/agents', { name: 'x' })).status).toBe(201);

    // Once the turns' post-turn hooks are done writing: the tenant as it is when exported.
    const tables = await tenantTables(poolOf(env.db));
    let source = await snapshot(poolOf(env.db), tenantId, tables);
    await waitFor(
      async () => {
        await new Promise((r) => setTimeout(r, 300));
        const now = await snapshot(poolOf(env.db), tenantId, tables);
        const same = JSON.stringify(now) === JSON.stringify(source);
        source = now;
        return same || undefined;
      },
      { what: 'the tenant quiet' },
    );
    const res = await admin.post(`/v1/admin/tenants/${tenantId}/export`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const archive = lines(res.body as string);
    expect(archive[0]).toMatchObject({
      kind: 'manifest',
      format: 'switchboard-tenant-export',
      version: 1,
      tenantId,
    });
    const end = archive[archive.length - 1] as unknown as { kind: string; counts: Record<string, number> };
    expect(end.kind).toBe('end');
    for (const table of [
      'tenants',
      'agents',
      'sessions',
      'turns',
      'messages',
      'events',
      'tool_calls',
      'ledger_entries',
      'tool_result_originals',
      'memory_records',
      'memory_blocks',
      'memory_block_versions',
      'work_items',
      'api_keys',
      'audit_events',
    ]) {
      expect([table, end.counts[table] > 0]).toEqual([table, true]);
    }
    // Nothing of another tenant.
    expect(JSON.stringify(archive)).not.toContain(other.tenantId);
    // The tenant's own admin key gets the same archive (rows), audited with its key.
    const own = await api.post('/v1/export');
    expect(own.status).toBe(200);
    // … plus the operator's export's own audit entry.
    expect(lines(own.body as string).filter((l) => l.kind === 'row').length).toBe(
      archive.filter((l) => l.kind === 'row').length + 1,
    );
    const audited = await admin.get(`/v1/admin/audit-events?tenantId=${tenantId}&action=tenant.exported`);
    expect(audited.body.data.map((e: { actor: string }) => e.actor).sort()).toEqual(
      [`api_key:${keyId}`, 'operator'].sort(),
    );

    // Resumed after a checkpoint in the middle: the rows after it, the same as the full archive's.
    // (A checkpoint past the audit log, which the exports themselves have added to since.)
    const order = (archive[0] as unknown as { tables: { name: string }[] }).tables.map((t) => t.name);
    const checkpoints = archive
      .map((l, i) => ({ l, i }))
      .filter(
        ({ l, i }) =>
          l.kind === 'checkpoint' && order.indexOf(archive[i - 1].table!) > order.indexOf('audit_events'),
      );
    const middle = checkpoints[Math.floor(checkpoints.length / 2)];
    const resumed = await admin.post(
      `/v1/admin/tenants/${tenantId}/export?after=${encodeURIComponent(middle.l.cursor!)}`,
    );
    expect(resumed.status).toBe(200);
    const rowsOf = (ls: ReturnType<typeof lines>) => ls.filter((l) => l.kind === 'row');
    expect(rowsOf(lines(resumed.body as string))).toEqual(rowsOf(archive.slice(middle.i + 1)));

    // Into a fresh database: created, migrated with `prisma migrate deploy`, imported by the admin CLI.
    const { url, pool: target, drop } = await freshDatabase();
    try {
      const file = path.join(dir, 'archive.jsonl');
      writeFileSync(file, res.body as string);
      const cli = (args: string[]) => adminCli(url, args);
      // A truncated archive (no end line): refused, nothing written.
      const cut = path.join(dir, 'cut.jsonl');
      writeFileSync(cut, (res.body as string).split('\n').slice(0, 5).join('\n'));
      const truncated = await cli(['tenant', 'import', cut]);
      expect(truncated.code).toBe(1);
      expect(truncated.stderr).toContain('incomplete');
      const { rows: empty } = await target.query('SELECT count(*)::int AS n FROM tenants');
      expect(empty[0].n).toBe(0);

      const imported = await cli(['tenant', 'import', file]);
      expect(imported.stderr).toBe('');
      expect(imported.code).toBe(0);
      expect(JSON.parse(imported.stdout)).toEqual({ tenantId, counts: expect.any(Object), mode: 'plain' });

      const before = source;
      const after = await snapshot(target, tenantId, await tenantTables(target));
      for (const t of tables) expect([t.name, after[t.name]]).toEqual([t.name, before[t.name]]);

      // A second import into the same (no longer empty) database: refused, nothing changed.
      const again = await cli(['tenant', 'import', file]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('not imported');
      expect(await snapshot(target, tenantId, await tenantTables(target))).toEqual(after);
      expect((await cli(['tenant', 'import'])).code).toBe(2);
    } finally {
      await drop();
    }
  });

  it('imports an encrypted tenant sealed under a data key of the target deployment, as the live writers seal; refuses it without a key provider unless --allow-plaintext', async () => {
    const { api, tenantId, agentId, sessionId } = await populatedTenant('sealed', 'on');
    await writersWithTheirOwnSql(api);
    const tables = await tenantTables(poolOf(env.db));
    const source = await quietSnapshot(tenantId, tables);
    // The source stores it sealed; the archive holds it in clear, and no data key.
    expect(source.messages.every((m) => JSON.parse(m).body.startsWith('sbe1.j.'))).toBe(true);
    const res = await admin.post(`/v1/admin/tenants/${tenantId}/export`);
    expect(res.status).toBe(200);
    const text = res.body as string;
    expect(text).not.toContain('sbe1.');
    expect(text).toContain('The user likes tea.');
    expect(lines(text).some((l) => l.table === 'tenant_data_keys')).toBe(false);
    const file = path.join(dir, 'sealed.jsonl');
    writeFileSync(file, text);

    // Opened as every reader of the data layer opens (the SqlDb reads and Prisma's extension).
    const opened = async (db: Db, key: string, rows: Record<string, string[]>) => {
      const cipher = new TenantCipher(db, LocalKeyRing.fromSpec(key));
      const out: Record<string, unknown[]> = {};
      for (const [table, json] of Object.entries(rows)) {
        if (table === 'tenant_data_keys') continue;
        out[table] = (await cipher.openAny(json.map((j) => JSON.parse(j)))) as unknown[];
      }
      return out;
    };
    const expected = await opened(env.db, `k1:${K1}`, source);

    const target = await freshDatabase();
    const targetDb = createPrisma(target.url, { poolSize: 2 });
    let gateway: AppProcess | undefined;
    try {
      // No key provider: refused with a clear message, nothing written.
      const refused = await adminCli(target.url, ['tenant', 'import', file]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('encryption mode on but no key provider is configured');
      expect(refused.stderr).toContain('--allow-plaintext');
      expect((await target.pool.query('SELECT count(*)::int AS n FROM tenants')).rows[0].n).toBe(0);

      // Another deployment's key ring: a new data key (v1) and every content column sealed with it.
      const imported = await adminCli(target.url, ['tenant', 'import', file], {
        ENCRYPTION_KEYS: `k2:${K2}`,
      });
      expect(imported.stderr).toBe('');
      expect(imported.code).toBe(0);
      expect(JSON.parse(imported.stdout)).toMatchObject({ tenantId, mode: 'sealed' });
      const { rows: keys } = await target.pool.query(
        'SELECT version, state, kek_id FROM tenant_data_keys WHERE tenant_id = $1::uuid',
        [tenantId],
      );
      expect(keys).toEqual([{ version: 1, state: 'active', kek_id: 'k2' }]);
      const stored = await snapshot(target.pool, tenantId, await tenantTables(target.pool));
      const sealed = (v: unknown) => typeof v === 'string' && v.startsWith('sbe1.');
      const rowsOf = (table: string) => stored[table].map((j) => JSON.parse(j) as Record<string, unknown>);
      for (const [table, columns] of Object.entries({
        messages: ['body'],
        tool_calls: ['arguments'],
        context_parts: ['content'],
        tool_result_originals: ['content'],
        memory_records: ['title', 'content'],
        memory_blocks: ['content'],
        memory_block_versions: ['content'],
      })) {
        const rows = rowsOf(table);
        expect([table, rows.length > 0]).toEqual([table, true]);
        for (const c of columns)
          expect([table, c, rows.filter((r) => !sealed(r[c])).length]).toEqual([table, c, 0]);
      }
      expect(
        rowsOf('turns').filter((t) => t.final_text !== null && t.final_text !== '' && !sealed(t.final_text)),
      ).toEqual([]);
      expect(rowsOf('turns').some((t) => sealed(t.final_text))).toBe(true);
      expect(rowsOf('tool_calls').some((c) => sealed(c.result))).toBe(true);
      // Journal events: content fields sealed one by one, the rest plain.
      const events = rowsOf('events').map((e) => e.data as Record<string, unknown>);
      const withText = events.filter((d) => d.text !== undefined);
      expect(withText.length).toBeGreaterThan(0);
      expect(withText.every((d) => sealed(d.text))).toBe(true);
      // Sealed where the live writers sealed, plain where they left it plain: every table, column and
      // nested JSON path of the source against the import (a content column the import does not know
      // of shows up here as sealed in the source, plain in the import).
      expect(sealedPathsDiffer(source, stored)).toEqual([]);
      for (const [table, column] of [
        ['approvals', 'reason'],
        ['approvals', 'arguments'],
        ['turns', 'cancel_note'],
        ['dataset_items', 'input'],
        ['tasks', 'output'],
      ])
        expect([table, column, rowsOf(table).some((r) => sealed(r[column]))]).toEqual([table, column, true]);
      // Content in clear only where the live writers leave it in clear: the tables holding a word of
      // it are the source's (memory text and blocks: nowhere; the `on` lexemes are not phrases).
      const holding = (rows: Record<string, string[]>, words: string) =>
        Object.keys(rows).filter((t) => rows[t].some((j) => j.includes(words)));
      for (const words of ['The user likes tea', 'Name: Ada L.'])
        expect([words, holding(stored, words)]).toEqual([words, []]);
      // (A single word: under `on` memory's tsvector keeps its lexeme — 'hello' of the episode — in
      // the source and the import alike, ADR 0067.)
      expect(holding(stored, 'hello')).toEqual(holding(source, 'hello'));
      // Read back through the data layer: the source's content, table by table.
      expect(await opened(targetDb, `k2:${K2}`, stored)).toEqual(expected);

      // …and over the API of a gateway on the imported database, with the tenant's own (imported) key.
      const port = await freePort();
      gateway = await spawnApp(
        'gateway',
        env.processEnv({
          DATABASE_URL: target.url,
          ENCRYPTION_KEYS: `k2:${K2}`,
          PORT: String(port),
          HOST: '127.0.0.1',
        }),
        { readyPattern: /Server listening at|successfully started/ },
      );
      const there = new Api(`http://127.0.0.1:${port}`, api.key);
      for (const route of [
        `/v1/sessions/${sessionId}/messages`,
        `/v1/agents/${agentId}/memory`,
        `/v1/agents/${agentId}/blocks/human`,
      ]) {
        const [a, b] = await Promise.all([api.get(route), there.get(route)]);
        expect([route, b.status]).toEqual([route, 200]);
        expect([route, b.body]).toEqual([route, a.body]);
      }
    } finally {
      await gateway?.kill('SIGTERM');
      await targetDb.$disconnect();
      await target.drop();
    }

    // --allow-plaintext: imported as exported, in clear, with a warning.
    const plain = await freshDatabase();
    try {
      const imported = await adminCli(plain.url, ['tenant', 'import', file, '--allow-plaintext']);
      expect(imported.code).toBe(0);
      expect(imported.stderr).toContain('imported in clear');
      expect(JSON.parse(imported.stdout)).toMatchObject({ tenantId, mode: 'plain' });
      const stored = await snapshot(plain.pool, tenantId, await tenantTables(plain.pool));
      expect(JSON.stringify(stored)).not.toContain('sbe1.');
      expect(stored.tenant_data_keys).toEqual([]);
    } finally {
      await plain.drop();
    }

    // Strict (the same archive, its tenant's settings saying strict): sealed, and no tsvector or
    // vector derived from content.
    const strictFile = path.join(dir, 'strict.jsonl');
    writeFileSync(
      strictFile,
      text
        .split('\n')
        .map((l) => {
          if (!l.startsWith('{"kind":"row","table":"tenants"')) return l;
          const entry = JSON.parse(l) as { row: { settings: Record<string, unknown> } };
          entry.row.settings = { ...entry.row.settings, encryption: { mode: 'strict' } };
          return JSON.stringify(entry);
        })
        .join('\n'),
    );
    const strict = await freshDatabase();
    try {
      const imported = await adminCli(strict.url, ['tenant', 'import', strictFile], {
        ENCRYPTION_KEYS: `k2:${K2}`,
      });
      expect(imported.code).toBe(0);
      expect(JSON.parse(imported.stdout)).toMatchObject({ tenantId, mode: 'strict' });
      const { rows } = await strict.pool.query<{ search: string; content: string }>(
        'SELECT search::text AS search, content FROM memory_records WHERE tenant_id = $1::uuid',
        [tenantId],
      );
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((r) => r.search === '' && r.content.startsWith('sbe1.t.'))).toBe(true);
      const { rows: vectors } = await strict.pool.query(
        'SELECT count(*)::int AS n FROM memory_embeddings WHERE tenant_id = $1::uuid',
        [tenantId],
      );
      expect(vectors[0].n).toBe(0);
    } finally {
      await strict.drop();
    }
  });

  it('refuses bad input on the export and deletion routes with 4xx, changing nothing', async () => {
    const { api, tenantId } = await newTenant(stack.url, ADMIN, 'bad-input');
    const auditBefore = (await admin.get(`/v1/admin/audit-events?tenantId=${tenantId}`)).body.data.length;
    expectError(await admin.post(`/v1/admin/tenants/${UNKNOWN_ID}/export`), 404, 'not_found');
    expectError(await admin.post('/v1/admin/tenants/not-a-uuid/export'), 404, 'not_found');
    expectError(await admin.post(`/v1/admin/tenants/${tenantId}/export?after=nonsense`), 400, 'bad_request');
    const wrongTable = Buffer.from(JSON.stringify(['nope', ['x']])).toString('base64url');
    expectError(
      await admin.post(`/v1/admin/tenants/${tenantId}/export?after=${wrongTable}`),
      400,
      'bad_request',
    );
    const wrongKey = Buffer.from(JSON.stringify(['sessions', ['not-a-uuid']])).toString('base64url');
    expectError(await api.post(`/v1/export?after=${wrongKey}`), 400, 'bad_request');
    expectError(await api.post(`/v1/admin/tenants/${tenantId}/export`), 401, 'unauthorized');
    expectError(await new Api(stack.url).post('/v1/export'), 401, 'unauthorized');
    const reader = await api.post('/v1/api-keys', { name: 'r', role: 'reader' });
    const developer = await api.post('/v1/api-keys', { name: 'd', role: 'developer' });
    expectError(await api.withKey(reader.body.key).post('/v1/export'), 403, 'insufficient_scope');
    expectError(await api.withKey(developer.body.key).post('/v1/export'), 403, 'insufficient_scope');

    expectError(await admin.delete(`/v1/admin/tenants/${UNKNOWN_ID}`), 404, 'not_found');
    expectError(await admin.delete('/v1/admin/tenants/nope'), 404, 'not_found');
    expectError(await api.delete(`/v1/admin/tenants/${tenantId}`), 401, 'unauthorized');
    expectError(await admin.get(`/v1/admin/tenant-deletions/${UNKNOWN_ID}`), 404, 'not_found');
    expectError(await admin.get('/v1/admin/tenant-deletions/nope'), 404, 'not_found');
    expectError(await admin.get('/v1/admin/tenant-deletions?cursor=nonsense'), 400, 'bad_request');
    expectError(await admin.get('/v1/admin/tenant-deletions?limit=0'), 400, 'validation_failed');
    expectError(await admin.patch('/v1/settings', { transcriptRetentionDays: 1 }), 401, 'unauthorized');
    for (const bad of [0, 3651, 1.5, '30', true]) {
      expectError(
        await api.patch('/v1/settings', { transcriptRetentionDays: bad }),
        400,
        'validation_failed',
      );
      expectError(
        await admin.patch(`/v1/admin/tenants/${tenantId}`, { transcriptRetentionDays: bad }),
        400,
        'validation_failed',
      );
    }
    expect((await api.get('/v1/settings')).body.transcriptRetentionDays).toBeNull();
    // Nothing written: the tenant is there, no deletion, no new audit entry but the refused reader/dev keys' creation.
    expect((await admin.get(`/v1/admin/tenants/${tenantId}`)).status).toBe(200);
    const audit = (await admin.get(`/v1/admin/audit-events?tenantId=${tenantId}`)).body.data as {
      action: string;
    }[];
    expect(audit.length - auditBefore).toBe(2);
    expect(audit.every((e) => e.action === 'api_key.created' || e.action === 'tenant.created')).toBe(true);
  });

  it('deletes every row of a tenant in batches, its Redis keys and queued jobs, with a receipt, while another tenant’s turns run', async () => {
    const a = await populatedTenant('doomed');
    const b = await populatedTenant('survivor');
    const pool = poolOf(env.db);
    // Enough rows to take a while: journal rows of A's session, in bulk.
    const [{ id: eventId }] = (
      await pool.query<{ id: string }>('SELECT id FROM events WHERE tenant_id = $1 LIMIT 1', [a.tenantId])
    ).rows;
    const BULK = 60_000;
    await pool.query(
      `INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data, created_at)
       SELECT gen_random_uuid(), tenant_id, session_id, turn_id, 100000 + g, type, data, created_at
       FROM events e, generate_series(1, $2::int) g WHERE e.id = $1`,
      [eventId, BULK],
    );
    // Tenant-scoped Redis keys and queued jobs, of A and of B.
    const prefix = env.queuePrefix;
    await redis.set(`${prefix}:rl:admission:t:${a.tenantId}`, '3');
    await redis.set(`${prefix}:live:session:${a.sessionId}`, 'x');
    await redis.set(`${prefix}:rl:admission:t:${b.tenantId}`, '3');
    const work = new Queue(QueueName.Work, { connection: redis, prefix });
    const jobOf = async (tenantId: string, agentId: string) =>
      (await publish(work, Jobs.work, { tenantId, agentId, cause: `at-${Date.now()}` }, { delay: 3_600_000 }))
        .id!;
    const aJob = await jobOf(a.tenantId, a.agentId);
    const bJob = await jobOf(b.tenantId, b.agentId);
    const rowsBefore = await tenantRowsLeft(pool, b.tenantId);

    // B's turn latency before.
    const bTurn = async () => {
      const session = (await b.api.post('/v1/sessions', { agentId: b.agentId })).body.id;
      const t0 = performance.now();
      const res = await b.api.post(`/v1/sessions/${session}/messages`, { content: 'ping', wait: true });
      expect(res.body.status).toBe('completed');
      return performance.now() - t0;
    };
    const before: number[] = [];
    for (let i = 0; i < 5; i++) before.push(await bTurn());

    expect((await a.api.get('/v1/agents')).status).toBe(200);
    const started = await admin.delete(`/v1/admin/tenants/${a.tenantId}`);
    expect(started.status).toBe(202);
    expect(started.body.deletion).toMatchObject({ tenantId: a.tenantId, tenantName: 'doomed' });
    const deletionId = started.body.deletion.id as string;
    // Its keys stop working with the request, though the key was used (and cached) just before.
    expectError(await a.api.get('/v1/agents'), 401, 'unauthorized');
    // Asking again while it runs: the same deletion.
    const again = await admin.delete(`/v1/admin/tenants/${a.tenantId}`);
    expect(again.status).toBe(202);
    expect(again.body.deletion.id).toBe(deletionId);

    const during: number[] = [];
    for (;;) {
      const d = (await admin.get(`/v1/admin/tenant-deletions/${deletionId}`)).body;
      if (d.status === 'completed' || d.status === 'failed') break;
      during.push(await bTurn());
    }
    const done = (await admin.get(`/v1/admin/tenant-deletions/${deletionId}`)).body;
    expect(done).toMatchObject({ status: 'completed', stage: 'done', tenantId: a.tenantId, error: null });
    expect(done.counts.events).toBe(BULK + (done.counts.events - BULK));
    expect(done.counts.events).toBeGreaterThan(BULK);
    expect(done.counts.tenants).toBe(1);
    expect(done.originals).toBeGreaterThan(0);
    expect(done.redisKeys).toBeGreaterThanOrEqual(2);
    expect(done.jobs).toBeGreaterThanOrEqual(1);
    expect(done.keyDestroyed).toBe(false);

    // Zero rows of A in every table and partition, found the same way as the deleter finds them.
    expect(await tenantRowsLeft(pool, a.tenantId)).toEqual({});
    expect(
      await redis.exists(`${prefix}:rl:admission:t:${a.tenantId}`, `${prefix}:live:session:${a.sessionId}`),
    ).toBe(0);
    expect(await work.getJob(aJob)).toBeUndefined();
    // B untouched: its rows (plus its new turns), its key, its job.
    const rowsAfter = await tenantRowsLeft(pool, b.tenantId);
    for (const [table, n] of Object.entries(rowsBefore)) expect(rowsAfter[table]).toBeGreaterThanOrEqual(n);
    expect(await redis.exists(`${prefix}:rl:admission:t:${b.tenantId}`)).toBe(1);
    expect(await work.getJob(bJob)).toBeDefined();
    await work.close();

    // The receipt: operator-wide, naming the tenant, with the counts.
    const receipts = await admin.get('/v1/admin/audit-events?action=tenant.deleted');
    const receipt = receipts.body.data.find((e: { targetId: string }) => e.targetId === a.tenantId);
    expect(receipt).toMatchObject({
      tenantId: null,
      actor: 'operator',
      targetType: 'tenant',
      details: { deletionId, tenantName: 'doomed', counts: done.counts, keyDestroyed: false },
    });
    const list = await admin.get('/v1/admin/tenant-deletions?limit=200');
    expect(list.body.data.map((d: { id: string }) => d.id)).toContain(deletionId);
    // The tenant is gone: its key, its routes, a second deletion.
    expectError(await a.api.get('/v1/agents'), 401, 'unauthorized');
    expectError(await admin.get(`/v1/admin/tenants/${a.tenantId}`), 404, 'not_found');
    expectError(await admin.delete(`/v1/admin/tenants/${a.tenantId}`), 404, 'not_found');

    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    console.log(
      `B turn latency (ms): before median ${median(before).toFixed(0)} (n=${before.length}), during deletion median ${
        during.length ? median(during).toFixed(0) : '-'
      } (n=${during.length}), max ${during.length ? Math.max(...during).toFixed(0) : '-'}; rows deleted ${Object.values(
        done.counts as Record<string, number>,
      ).reduce((s, n) => s + n, 0)}`,
    );
  });

  it('purges only the transcripts past the tenant’s retention, keeping cost lines and usage totals', async () => {
    const a = await newTenant(stack.url, ADMIN, 'retained');
    const b = await newTenant(stack.url, ADMIN, 'kept-forever');
    const setUp = async (api: Api) => {
      const agent = (await api.post('/v1/agents', { name: 'echo', model: 'scripted/echo' })).body.id;
      const session = async () => {
        const id = (await api.post('/v1/sessions', { agentId: agent })).body.id as string;
        const turn = await api.post(`/v1/sessions/${id}/messages`, { content: 'remember me', wait: true });
        expect(turn.body.status).toBe('completed');
        return { id, turnId: turn.body.id as string };
      };
      return { old: await session(), fresh: await session() };
    };
    const sa = await setUp(a.api);
    const sb = await setUp(b.api);
    const pool = poolOf(env.db);
    // Both tenants' `old` sessions were last active 40 days ago.
    for (const s of [sa.old, sb.old]) {
      await pool.query(
        `UPDATE sessions SET created_at = now() - interval '40 days', updated_at = now() - interval '40 days' WHERE id = $1`,
        [s.id],
      );
      await pool.query(`UPDATE turns SET created_at = now() - interval '40 days' WHERE session_id = $1`, [
        s.id,
      ]);
    }
    const usage = async (api: Api) => (await api.get('/v1/usage?from=2020-01-01T00:00:00Z')).body.totals;
    const usageBefore = [await usage(a.api), await usage(b.api)];

    const set = await a.api.patch('/v1/settings', { transcriptRetentionDays: 30 });
    expect(set.status).toBe(200);
    expect(set.body.transcriptRetentionDays).toBe(30);
    expect((await admin.get(`/v1/admin/tenants/${a.tenantId}`)).body.transcriptRetentionDays).toBe(30);

    const entry = await waitFor(
      async () =>
        (await admin.get(`/v1/admin/audit-events?tenantId=${a.tenantId}&action=tenant.retention_purged`)).body
          .data[0],
      { what: 'the retention purge' },
    );
    expect(entry.details).toMatchObject({ retentionDays: 30, sessions: 1 });
    expect(entry.details.messages).toBeGreaterThan(0);

    const messages = async (api: Api, id: string) => (await api.get(`/v1/sessions/${id}/messages`)).body.data;
    expect(await messages(a.api, sa.old.id)).toEqual([]);
    expect((await messages(a.api, sa.fresh.id)).length).toBeGreaterThan(0);
    expect((await messages(b.api, sb.old.id)).length).toBeGreaterThan(0);
    // The purged session's turn still reads, with its cost.
    const turn = await a.api.get(`/v1/turns/${sa.old.turnId}`);
    expect(turn.status).toBe(200);
    expect(Number(turn.body.costUsd)).toBeGreaterThan(0);
    expect([await usage(a.api), await usage(b.api)]).toEqual(usageBefore);
    // No purge twice, and none for B.
    expect(
      (await admin.get(`/v1/admin/audit-events?tenantId=${b.tenantId}&action=tenant.retention_purged`)).body
        .data,
    ).toEqual([]);
    // Back to for ever.
    expect(
      (await a.api.patch('/v1/settings', { transcriptRetentionDays: null })).body.transcriptRetentionDays,
    ).toBeNull();
  });
});
