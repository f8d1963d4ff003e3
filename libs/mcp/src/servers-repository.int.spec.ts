import { createTestEnv, seedTenant, type TestEnv } from '@switchboard/testing';
import { McpServersRepository, type NewMcpServer } from './servers-repository';

/** `McpServersRepository` on real Postgres: live names, soft delete, changes of a deleted server. */
jest.setTimeout(120_000);

describe('McpServersRepository', () => {
  let env: TestEnv;
  let tenantId: string;
  let servers: McpServersRepository;

  beforeAll(async () => {
    env = await createTestEnv();
    ({ tenantId } = await seedTenant(env.db, 'mcp-servers-repository'));
    servers = new McpServersRepository(env.db);
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const server = (name: string): NewMcpServer => ({
    tenantId,
    name,
    url: 'https://mcp.example.com/mcp',
    authHeaderName: null,
    authHeaderValue: null,
    timeoutMs: 30_000,
    idempotencyKeys: false,
    approval: 'side_effects',
  });

  it('one live server per name, even registered concurrently; a deleted one frees its name', async () => {
    const results = await Promise.all([servers.create(server('docs')), servers.create(server('docs'))]);
    expect(results.filter((r) => r === 'name_taken')).toHaveLength(1);
    const created = results.find((r) => r !== 'name_taken')!;
    expect(await servers.nameTaken(tenantId, 'docs')).toBe(true);

    expect(await servers.softDelete(tenantId, created.id)).toBe(true);
    expect(await servers.softDelete(tenantId, created.id)).toBe(false);
    expect(await servers.find(tenantId, created.id)).toBeNull();
    expect(await servers.nameTaken(tenantId, 'docs')).toBe(false);
    expect(await servers.create(server('docs'))).not.toBe('name_taken');
  });

  it('changes only the settings given, and not those of a deleted server', async () => {
    const row = await servers.create(server('tickets'));
    if (row === 'name_taken') throw new Error('taken');
    expect(await servers.update(tenantId, row.id, { timeoutMs: 5_000 })).toBe(true);
    expect(await servers.find(tenantId, row.id)).toMatchObject({
      timeoutMs: 5_000,
      idempotencyKeys: false,
      approval: 'side_effects',
    });
    await servers.softDelete(tenantId, row.id);
    expect(await servers.update(tenantId, row.id, { approval: 'never' })).toBe(false);
  });
});
