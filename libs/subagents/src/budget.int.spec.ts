import type { Queue } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import { newId } from '@switchboard/contracts';
import {
  operatorPrompt,
  seedSession,
  startAdmission,
  type AdmissionFixture,
  type TestEnv,
} from '@switchboard/testing';
import type { ToolContext } from '@switchboard/tools';
import { TaskService } from './tasks';
import { subagentTools } from './tools';

/**
 * A child's budget is capped by what is left of its parent's (docs/adr/0025), against real Postgres:
 * the spawn reads the parent's cap and spend (its own cost and its descendants'), writes the child's
 * share on the child's input message, and refuses with `parent_budget_exhausted` when nothing is left.
 */
jest.setTimeout(120_000);

describe('spawn_subagent and the parent’s budget', () => {
  let f: AdmissionFixture;
  let env: TestEnv;
  let turnsQueue: Queue;
  let admission: Admission;
  let svc: TaskService;

  beforeAll(async () => {
    f = await startAdmission();
    ({ env, turnsQueue, admission } = f);
    svc = new TaskService(env.db, { turnsQueue, logger: f.logger });
  });

  afterAll(() => f?.close());

  const spawnTool = () => subagentTools(svc).find((t) => t.name === 'spawn_subagent')!;
  const ctx = (tenantId: string, sessionId: string, turnId: string, callId: string): ToolContext => ({
    tenantId,
    sessionId,
    turnId,
    callId,
    idempotencyKey: `${turnId}:${callId}`,
    signal: new AbortController().signal,
    resumed: false,
    writeGate: { isOpen: () => true },
  });

  async function agent(tenantId: string, name: string, tier: string, budgets: Record<string, number> = {}) {
    const id = newId();
    await env.db.agent.create({
      data: { id, tenantId, name, model: 'openai-chat/m', tier, budgets },
    });
    return id;
  }

  /** A root turn of an agent with `budgets`, running. */
  async function root(budgets: Record<string, number>) {
    const tenantId = newId();
    await env.db.tenant.create({ data: { id: tenantId, name: 'budget' } });
    const agentId = await agent(tenantId, 'boss', 'chat', budgets);
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const { turnId } = await admission.admit(operatorPrompt({ tenantId, sessionId }, 'delegate'));
    await env.db
      .$executeRaw`UPDATE turns SET status = 'running', started_at = now() WHERE id = ${turnId}::uuid`;
    return { tenantId, sessionId, turnId };
  }

  const cost = (turnId: string, usd: number) =>
    env.db.$executeRaw`UPDATE turns SET cost_usd = ${usd} WHERE id = ${turnId}::uuid`;

  /** The share the spawn wrote on the child's input message, and the child's task. */
  async function spawned(answer: unknown) {
    const taskId = (answer as { task_id: string }).task_id;
    const task = await env.db.task.findUniqueOrThrow({ where: { id: taskId } });
    const turn = await env.db.turn.findUniqueOrThrow({ where: { id: task.childTurnId! } });
    const message = await env.db.message.findUniqueOrThrow({ where: { id: turn.inputMessageId } });
    return {
      task,
      turn,
      maxUsd: (message.metadata as { subagent: { maxUsd?: number } }).subagent.maxUsd,
    };
  }

  it('gives each child min(its own maxUsd, what the parent has left); a child’s children share its share', async () => {
    const p = await root({ maxUsd: 1 });
    await agent(p.tenantId, 'lead', 'reasoning', { maxUsd: 5 });
    await agent(p.tenantId, 'cheap', 'worker', { maxUsd: 0.1 });
    await agent(p.tenantId, 'plain', 'worker');
    await cost(p.turnId, 0.3);
    const a = await spawned(
      await spawnTool().execute(
        { agent: 'lead', task: 'lead it' },
        ctx(p.tenantId, p.sessionId, p.turnId, 'c1'),
      ),
    );
    expect(a.maxUsd).toBe(0.7);
    // The child spends: its cost counts against the parent too.
    await cost(a.turn.id, 0.2);
    const b = await spawned(
      await spawnTool().execute({ agent: 'cheap', task: 'x' }, ctx(p.tenantId, p.sessionId, p.turnId, 'c2')),
    );
    expect(b.maxUsd).toBe(0.1);
    const c = await spawned(
      await spawnTool().execute({ agent: 'plain', task: 'y' }, ctx(p.tenantId, p.sessionId, p.turnId, 'c3')),
    );
    expect(c.maxUsd).toBe(0.5);
    // The lead's own children: its cap is its share (0.7, not its agent's 5), less its 0.2 spent.
    const g = await spawned(
      await spawnTool().execute(
        { agent: 'plain', task: 'z' },
        ctx(p.tenantId, a.turn.sessionId, a.turn.id, 'g1'),
      ),
    );
    expect(g.maxUsd).toBe(0.5);
    expect(g.task.depth).toBe(2);
  });

  it('refuses the spawn with parent_budget_exhausted when nothing is left, and writes no task', async () => {
    const p = await root({ maxUsd: 1 });
    await agent(p.tenantId, 'plain', 'worker');
    await cost(p.turnId, 0.6);
    const first = await spawned(
      await spawnTool().execute({ agent: 'plain', task: 'x' }, ctx(p.tenantId, p.sessionId, p.turnId, 'c1')),
    );
    expect(first.maxUsd).toBe(0.4);
    await cost(first.turn.id, 0.4);
    await expect(
      spawnTool().execute({ agent: 'plain', task: 'y' }, ctx(p.tenantId, p.sessionId, p.turnId, 'c2')),
    ).rejects.toMatchObject({
      kind: 'parent_budget_exhausted',
      retryable: false,
      details: { maxUsd: 1, spentUsd: 1 },
    });
    expect(await env.db.task.count({ where: { parentTurnId: p.turnId } })).toBe(1);
  });

  it('a parent without maxUsd leaves its child its own cap, or none', async () => {
    const p = await root({});
    await agent(p.tenantId, 'cheap', 'worker', { maxUsd: 0.1 });
    await agent(p.tenantId, 'plain', 'worker');
    await cost(p.turnId, 50);
    const a = await spawned(
      await spawnTool().execute({ agent: 'cheap', task: 'x' }, ctx(p.tenantId, p.sessionId, p.turnId, 'c1')),
    );
    expect(a.maxUsd).toBe(0.1);
    const b = await spawned(
      await spawnTool().execute({ agent: 'plain', task: 'y' }, ctx(p.tenantId, p.sessionId, p.turnId, 'c2')),
    );
    expect(b.maxUsd).toBeUndefined();
  });
});
