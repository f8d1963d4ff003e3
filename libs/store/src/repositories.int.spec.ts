import { newId } from '@switchboard/contracts';
import { createTestEnv, seedSession, seedTenant, type TestEnv } from '@switchboard/testing';
import { ApprovalsRepository } from './approvals-repository';
import { SessionsRepository } from './sessions-repository';
import { ApiKeysRepository, TenantsRepository } from './tenants-repository';

/** The gateway's repositories in libs/store where they hold more than one query, on real Postgres. */
jest.setTimeout(120_000);

describe('store repositories', () => {
  let env: TestEnv;
  let tenantId: string;
  let agentId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    ({ tenantId, agentId } = await seedTenant(env.db, 'repositories'));
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  describe('TenantsRepository', () => {
    it('merges concurrent settings updates one after the other: none is lost', async () => {
      const tenants = new TenantsRepository(env.db);
      const models = Array.from({ length: 8 }, (_, i) => `openai/model-${i}`);
      await Promise.all(
        models.map((m) =>
          tenants.updateSettings(tenantId, { modelPrices: { [m]: { input: 1, output: 2 } } }, 'api_key:test'),
        ),
      );
      const { settings } = (await tenants.settings(tenantId))!;
      expect(Object.keys((settings as { modelPrices: object }).modelPrices).sort()).toEqual(models.sort());
    });

    it('answers undefined for a tenant that does not exist, and writes nothing', async () => {
      const tenants = new TenantsRepository(env.db);
      const id = newId();
      expect(await tenants.settings(id)).toBeUndefined();
      expect(await tenants.updateSettings(id, { blockedTools: ['x'] }, 'api_key:test')).toBeUndefined();
      expect(await env.db.tenant.count({ where: { id } })).toBe(0);
    });

    it('creates a tenant with its first key in one transaction', async () => {
      const { tenant, apiKey } = await new TenantsRepository(env.db).createWithKey('new', {
        prefix: 'sb_x',
        hash: `h-${newId()}`,
      });
      expect(apiKey).toMatchObject({ tenantId: tenant.id, name: 'default', prefix: 'sb_x' });
      // A second tenant with the same key hash fails whole: no tenant without its key.
      const before = await env.db.tenant.count();
      await expect(
        new TenantsRepository(env.db).createWithKey('dup', { prefix: 'sb_x', hash: apiKey.hash }),
      ).rejects.toThrow();
      expect(await env.db.tenant.count()).toBe(before);
    });
  });

  describe('ApiKeysRepository', () => {
    it('revokes once: a revoked key keeps its first revocation time', async () => {
      const keys = new ApiKeysRepository(env.db);
      const key = await keys.create(
        tenantId,
        { name: 'k', prefix: 'sb_k', hash: `h-${newId()}` },
        'operator',
      );
      const revoked = await keys.revoke(key, 'operator');
      expect(revoked.revokedAt).toBeInstanceOf(Date);
      expect((await keys.revoke(revoked, 'operator')).revokedAt).toEqual(revoked.revokedAt);
      expect(await keys.byHash(key.hash)).toMatchObject({
        id: key.id,
        tenantId,
        revokedAt: revoked.revokedAt,
      });
      expect(await keys.find(newId(), key.id)).toBeNull();
    });
  });

  describe('SessionsRepository', () => {
    it('pages by id and says whether more follow; another tenant sees none', async () => {
      const { tenantId: own, agentId: ownAgent } = await seedTenant(env.db, 'paging');
      const sessions = new SessionsRepository(env.db);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push((await sessions.create({ tenantId: own, agentId: ownAgent, title: null, metadata: {} })).id);
      }
      ids.sort();
      const first = await sessions.page(own, undefined, 2);
      expect(first.rows.map((s) => s.id)).toEqual(ids.slice(0, 2));
      expect(first.more).toBe(true);
      const second = await sessions.page(own, ids[1], 2);
      expect(second.rows.map((s) => s.id)).toEqual([ids[2]]);
      expect(second.more).toBe(false);
      expect(await sessions.find(tenantId, ids[0])).toBeNull();
    });

    it('closes once', async () => {
      const sessions = new SessionsRepository(env.db);
      const session = (await sessions.find(tenantId, await seedSession(env.db, tenantId, agentId)))!;
      const closed = await sessions.close(session);
      expect(closed).toMatchObject({ status: 'closed' });
      expect((await sessions.close(closed)).closedAt).toEqual(closed.closedAt);
    });
  });

  describe('ApprovalsRepository', () => {
    it('lists pending approvals only while their turn waits for them', async () => {
      const sessionId = await seedSession(env.db, tenantId, agentId);
      const approvals = new ApprovalsRepository(env.db);
      const approvalIds: string[] = [];
      for (const [seq, status] of [
        [1, 'awaiting_approval'],
        [2, 'cancelled'],
      ] as const) {
        const messageId = newId();
        const turnId = newId();
        await env.db.message.create({
          data: {
            id: messageId,
            tenantId,
            agentId,
            sessionId,
            turnSeq: seq,
            position: 0,
            role: 'user',
            kind: 'operator_prompt',
            origin: { kind: 'operator' },
            trust: 'trusted_operator',
            authorityClass: 'operator_instruction',
            deliverySurface: 'http_public_enqueue',
            admissionContext: 'control_authenticated',
            body: { type: 'text', text: 'x' },
          },
        });
        await env.db.turn.create({
          data: { id: turnId, tenantId, sessionId, agentId, seq, inputMessageId: messageId, status },
        });
        const id = newId();
        await env.db.approval.create({
          data: {
            id,
            tenantId,
            sessionId,
            turnId,
            callId: `c-${seq}`,
            toolName: 'word_count',
            arguments: {},
            sideEffect: 'read_only',
            policy: 'tool',
            expiresAt: new Date(Date.now() + 60_000),
          },
        });
        approvalIds.push(id);
      }
      const pending = await approvals.page(tenantId, { status: 'pending' }, 10);
      expect(pending.rows.map((a) => a.id)).toEqual([approvalIds[0]]);
      // Joined in the same read: the turn's agent and its input message's envelope.
      expect(pending.rows[0]).toMatchObject({
        agentId,
        provenance: {
          kind: 'operator_prompt',
          origin: { kind: 'operator' },
          trust: 'trusted_operator',
          authorityClass: 'operator_instruction',
        },
      });
      expect(await approvals.find(tenantId, approvalIds[0])).toEqual(pending.rows[0]);
      expect(await approvals.find(newId(), approvalIds[0])).toBeNull();
      const all = await approvals.page(tenantId, {}, 1);
      expect(all.rows.map((a) => a.id)).toEqual([[...approvalIds].sort().reverse()[0]]);
      expect(all.more).toBe(true);
    });
  });
});
