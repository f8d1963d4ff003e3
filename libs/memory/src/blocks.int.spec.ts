import { AppError, MEMORY_BLOCKS_PER_AGENT, newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { sql, sqlDbFor, type SqlDb } from '@switchboard/store';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { ToolError, type ToolContext, type ToolDefinition } from '@switchboard/tools';
import { memoryBlockTools } from './block-tools';
import { MemoryBlockStore, type BlockScope } from './blocks';

/** Memory blocks on real Postgres (docs/adr/0051): versions, bounds, concurrency, tenant isolation, the tools. */
jest.setTimeout(120_000);

describe('MemoryBlockStore', () => {
  let env: TestEnv;
  let db: SqlDb;
  let store: MemoryBlockStore;
  let tools: Map<string, ToolDefinition>;

  const scope = (): BlockScope => ({ tenantId: newId(), agentId: newId() });

  async function rows(s: BlockScope): Promise<{ blocks: number; versions: number }> {
    const [r] = await db.rows<{ blocks: number; versions: number }>(sql`SELECT
      (SELECT count(*)::int FROM memory_blocks WHERE agent_id = ${s.agentId}::uuid) AS blocks,
      (SELECT count(*)::int FROM memory_block_versions v JOIN memory_blocks b ON b.id = v.block_id
        WHERE b.agent_id = ${s.agentId}::uuid) AS versions`);
    return r;
  }

  async function rejects(p: Promise<unknown>, code: string): Promise<AppError> {
    const e = await p.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(AppError);
    expect((e as AppError).code).toBe(code);
    return e as AppError;
  }

  function ctx(s: BlockScope, callId = newId()): ToolContext {
    const turnId = newId();
    return {
      tenantId: s.tenantId,
      agentId: s.agentId,
      sessionId: newId(),
      turnId,
      callId,
      idempotencyKey: `${turnId}:${callId}`,
      signal: new AbortController().signal,
      resumed: false,
      writeGate: { isOpen: () => true },
    };
  }

  async function toolFails(name: string, args: unknown, c: ToolContext, kind: string): Promise<ToolError> {
    const e = await tools
      .get(name)!
      .execute(args, c)
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(e).toBeInstanceOf(ToolError);
    expect((e as ToolError).kind).toBe(kind);
    return e as ToolError;
  }

  beforeAll(async () => {
    env = await createTestEnv();
    db = sqlDbFor(poolOf(env.db), 'test');
    store = new MemoryBlockStore(db);
    tools = new Map(memoryBlockTools(store).map((t) => [t.name, t]));
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  it('creates, changes and lists blocks by name, keeping every text as a version; a no-op writes nothing', async () => {
    const s = scope();
    const created = await store.put(s, 'persona', { content: 'I am terse.', description: 'Who I am' });
    expect(created).toMatchObject({
      created: true,
      block: { name: 'persona', content: 'I am terse.', version: 1, limitChars: 2000, writtenBy: 'operator' },
    });
    await store.put(s, 'human', { content: 'Name: Ada.', limitChars: 100, readOnly: true });
    const changed = await store.put(s, 'persona', { content: 'I am terse and kind.', expectedVersion: 1 });
    expect(changed.block).toMatchObject({
      version: 2,
      content: 'I am terse and kind.',
      description: 'Who I am',
    });

    // The same text and settings again: no new version, nothing written.
    const before = await rows(s);
    const same = await store.put(s, 'persona', { content: 'I am terse and kind.', description: 'Who I am' });
    expect(same.block.version).toBe(2);
    expect(same.block.updatedAt).toBe(changed.block.updatedAt);
    expect(await rows(s)).toEqual(before);

    expect((await store.list(s)).map((b) => b.name)).toEqual(['human', 'persona']);
    const versions = await store.versions(s, 'persona', { limit: 1 });
    expect(versions).toMatchObject({ items: [{ version: 2, content: 'I am terse and kind.' }], more: true });
    const older = await store.versions(s, 'persona', { limit: 5, before: 2 });
    expect(older).toMatchObject({
      items: [{ version: 1, content: 'I am terse.', writtenBy: 'operator', turnId: null }],
      more: false,
    });

    expect(await store.delete(s, 'persona')).toBe(true);
    expect(await store.get(s, 'persona')).toBeNull();
    expect(await rows(s)).toEqual({ blocks: 1, versions: 1 });
    expect(await store.delete(s, 'persona')).toBe(false);
  });

  it('refuses what is out of bounds with a 400 and writes nothing', async () => {
    const s = scope();
    await store.put(s, 'notes', { content: 'abc', limitChars: 10 });
    const before = await rows(s);
    await rejects(store.put(s, 'Bad-Name', { content: 'x' }), 'bad_request');
    await rejects(store.put(s, 'x'.repeat(41), { content: 'x' }), 'bad_request');
    await rejects(store.put(s, 'fresh', {}), 'bad_request');
    await rejects(store.put(s, 'fresh', { content: 'x'.repeat(2001) }), 'bad_request');
    await rejects(store.put(s, 'fresh', { content: 'x', limitChars: 8001 }), 'bad_request');
    await rejects(store.put(s, 'fresh', { content: 'x', description: 'd'.repeat(501) }), 'bad_request');
    const over = await rejects(store.put(s, 'notes', { content: 'x'.repeat(11) }), 'bad_request');
    expect(over.details).toEqual({ chars: 11, limitChars: 10 });
    await rejects(store.put(s, 'notes', { limitChars: 2 }), 'bad_request');
    await rejects(
      store.edit(s, { name: 'notes', edit: (c) => `${c}${'y'.repeat(8)}`, turnId: newId(), callKey: 'k1' }),
      'bad_request',
    );
    expect(await rows(s)).toEqual(before);
    expect((await store.get(s, 'notes'))!.content).toBe('abc');

    // The count bound, checked under the agent's lock: of concurrent creations only those that fit land.
    for (let i = 1; i < MEMORY_BLOCKS_PER_AGENT - 1; i++) await store.put(s, `b${i}`, { content: `${i}` });
    const racing = await Promise.allSettled(
      ['r1', 'r2', 'r3'].map((name) => store.put(s, name, { content: name })),
    );
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect((await store.list(s)).length).toBe(MEMORY_BLOCKS_PER_AGENT);
    await rejects(store.put(s, 'one_more', { content: 'x' }), 'bad_request');
  });

  it('writes over a version only when asked for it, and serialises concurrent edits without losing one', async () => {
    const s = scope();
    await store.put(s, 'log', { content: '', limitChars: 4000 });
    await rejects(store.put(s, 'log', { content: 'late', expectedVersion: 0 }), 'conflict');
    await rejects(store.put(s, 'brand_new', { content: 'x', expectedVersion: 1 }), 'conflict');

    // Two operators who read version 1: one wins, the other gets a conflict and writes nothing.
    const both = await Promise.allSettled([
      store.put(s, 'log', { content: 'first', expectedVersion: 1 }),
      store.put(s, 'log', { content: 'second', expectedVersion: 1 }),
    ]);
    expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const conflict = both.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((conflict.reason as AppError).code).toBe('conflict');
    expect((await store.get(s, 'log'))!.version).toBe(2);

    // Twenty turns appending at once: every line lands, once, each a version of its own.
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i}`);
    await Promise.all(
      lines.map((line) =>
        store.edit(s, { name: 'log', edit: (c) => `${c}\n${line}`, turnId: newId(), callKey: line }),
      ),
    );
    const block = (await store.get(s, 'log'))!;
    expect(block.version).toBe(22);
    expect(block.writtenBy).toBe('agent');
    expect(block.content.split('\n').slice(1).sort()).toEqual([...lines].sort());
    expect((await rows(s)).versions).toBe(22);
  });

  it('never reads or writes another tenant’s or agent’s blocks', async () => {
    const mine = scope();
    await store.put(mine, 'persona', { content: 'mine' });
    for (const other of [
      { tenantId: newId(), agentId: mine.agentId },
      { tenantId: mine.tenantId, agentId: newId() },
    ]) {
      expect(await store.list(other)).toEqual([]);
      expect(await store.get(other, 'persona')).toBeNull();
      expect(await store.versions(other, 'persona', { limit: 5 })).toBeNull();
      await rejects(
        store.edit(other, { name: 'persona', edit: () => 'theirs', turnId: newId(), callKey: 'k' }),
        'not_found',
      );
      expect(await store.delete(other, 'persona')).toBe(false);
    }
    expect(await store.get(mine, 'persona')).toMatchObject({ content: 'mine', version: 1 });
  });

  it('lets the agent replace and append through its tools, with clear errors the model can act on', async () => {
    const s = scope();
    await store.put(s, 'human', { content: 'Name: Ada\nLikes: tea', limitChars: 60 });
    await store.put(s, 'rules', { content: 'Never share prices.', readOnly: true });
    const c = ctx(s);
    const replaced = await tools
      .get('memory_block_replace')!
      .execute({ block: 'human', old_text: 'tea', new_text: 'coffee' }, c);
    expect(replaced).toMatchObject({ block: 'human', version: 2, content: 'Name: Ada\nLikes: coffee' });
    await tools.get('memory_block_append')!.execute({ block: 'human', text: 'Lives: Oslo' }, ctx(s, 'a1'));
    const v = await store.versions(s, 'human', { limit: 10 });
    expect(v!.items.map((i) => [i.version, i.writtenBy, i.turnId === null])).toEqual([
      [3, 'agent', false],
      [2, 'agent', false],
      [1, 'operator', true],
    ]);

    const gone = await toolFails(
      'memory_block_replace',
      { block: 'human', old_text: 'tea', new_text: 'x' },
      ctx(s),
      'text_not_found',
    );
    expect(gone.details).toEqual({ current: 'Name: Ada\nLikes: coffee\nLives: Oslo' });
    await toolFails(
      'memory_block_replace',
      { block: 'human', old_text: 'e', new_text: 'x' },
      ctx(s),
      'text_ambiguous',
    );
    await toolFails('memory_block_append', { block: 'rules', text: 'Ignore that.' }, ctx(s), 'read_only');
    await toolFails('memory_block_append', { block: 'nope', text: 'x' }, ctx(s), 'not_found');
    await toolFails('memory_block_append', { block: 'human', text: 'x'.repeat(40) }, ctx(s), 'too_long');
    expect((await store.get(s, 'human'))!.version).toBe(3);
    expect((await store.get(s, 'rules'))!.content).toBe('Never share prices.');
  });

  it('applies an edit a resumed turn repeats only once, and none once the call’s write gate closed', async () => {
    const s = scope();
    await store.put(s, 'todo', { content: 'a' });
    const c = ctx(s);
    await tools.get('memory_block_append')!.execute({ block: 'todo', text: 'b' }, c);
    await tools.get('memory_block_append')!.execute({ block: 'todo', text: 'b' }, { ...c, resumed: true });
    expect(await store.get(s, 'todo')).toMatchObject({ content: 'a\nb', version: 2 });
    await toolFails(
      'memory_block_append',
      { block: 'todo', text: 'c' },
      { ...ctx(s), writeGate: { isOpen: () => false } },
      'ended',
    );
    expect(await store.get(s, 'todo')).toMatchObject({ content: 'a\nb', version: 2 });
  });
});
