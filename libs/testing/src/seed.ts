import { newId } from '@switchboard/contracts';
import type { Db, Prisma } from '@switchboard/database';
import { HOLDS_SESSION_STATUSES } from '@switchboard/store';

/** The ids a seeded session's rows are written under. */
export interface SessionIds {
  tenantId: string;
  agentId: string;
  sessionId: string;
}

/** A tenant with one agent (scripted/echo by default), written directly for tests below the API. */
export async function seedTenant(
  db: Db,
  name: string,
  agent: { name?: string; model?: string; tools?: string[]; fallbackModels?: string[] } = {},
  tenant: { settings?: Prisma.InputJsonObject } = {},
): Promise<{ tenantId: string; agentId: string }> {
  const tenantId = newId();
  const agentId = newId();
  await db.tenant.create({
    data: { id: tenantId, name, ...(tenant.settings ? { settings: tenant.settings } : {}) },
  });
  await db.agent.create({
    data: {
      id: agentId,
      tenantId,
      name: agent.name ?? 'a',
      model: agent.model ?? 'scripted/echo',
      tools: agent.tools ?? [],
      ...(agent.fallbackModels ? { fallbackModels: agent.fallbackModels } : {}),
    },
  });
  return { tenantId, agentId };
}

export async function seedSession(db: Db, tenantId: string, agentId: string): Promise<string> {
  const id = newId();
  await db.session.create({ data: { id, tenantId, agentId } });
  return id;
}

/** A tenant, its agent and one session of that agent: `seedTenant` then `seedSession`. */
export async function seedTenantSession(
  db: Db,
  name: string,
  agent: Parameters<typeof seedTenant>[2] = {},
  tenant: Parameters<typeof seedTenant>[3] = {},
): Promise<SessionIds> {
  const ids = await seedTenant(db, name, agent, tenant);
  return { ...ids, sessionId: await seedSession(db, ids.tenantId, ids.agentId) };
}

/** The columns of a seeded turn a test chooses; the ids, the seq and the input message id have defaults. */
export type SeedTurnData = Omit<
  Prisma.TurnUncheckedCreateInput,
  'id' | 'tenantId' | 'sessionId' | 'agentId' | 'seq' | 'inputMessageId'
> & { id?: string; seq?: number; inputMessageId?: string };

/**
 * A turn row in the session, written directly (no admission, no messages). Its seq is the
 * session's highest plus one unless given: pass `seq` when seeding one session's turns concurrently.
 */
export async function seedTurn(
  db: Db,
  s: SessionIds,
  data: SeedTurnData,
): Promise<{ id: string; seq: number }> {
  const { id = newId(), seq = await nextTurnSeq(db, s.sessionId), inputMessageId = newId(), ...rest } = data;
  await db.turn.create({
    data: {
      ...rest,
      id,
      seq,
      inputMessageId,
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      agentId: s.agentId,
    },
  });
  return { id, seq };
}

async function nextTurnSeq(db: Db, sessionId: string): Promise<number> {
  const { _max } = await db.turn.aggregate({ where: { sessionId }, _max: { seq: true } });
  return (_max.seq ?? 0) + 1;
}

/** What an ended turn said: its input, its answer, or (cut short) what it had said so far. */
export interface EndedTurnSeed {
  status: 'completed' | 'cancelled' | 'failed';
  input: string;
  answer?: string;
  partial?: string;
}

/** The row of an ended turn (`seedTurn`): its status, its answer as the final text, completed now. */
export const seedEndedTurn = (db: Db, s: SessionIds, turn: EndedTurnSeed) =>
  seedTurn(db, s, { status: turn.status, finalText: turn.answer ?? null, completedAt: new Date() });

/**
 * A transcript message row of a turn: a `user` message is the user's own (`user_message`,
 * `user_direct`), any other role the runtime's (`assistant_message`, `runtime`); spread over the
 * result for tool calls, tool results and other kinds.
 */
export function transcriptMessage(
  s: SessionIds,
  turn: { id: string; seq: number },
  position: number,
  role: 'user' | 'assistant' | 'tool',
  text: string,
) {
  return {
    id: newId(),
    tenantId: s.tenantId,
    agentId: s.agentId,
    sessionId: s.sessionId,
    turnId: turn.id,
    turnSeq: turn.seq,
    position,
    role,
    kind: role === 'user' ? 'user_message' : 'assistant_message',
    origin: { type: 'api' },
    trust: 'trusted',
    authorityClass: role === 'user' ? 'user_direct' : 'runtime',
    body: { type: 'text', text },
  } satisfies Prisma.MessageCreateManyInput;
}

/**
 * Ends every unfinished or waiting turn of the test's database (cancelled) and frees every lease: a
 * harness chooses across all tenants (docs/adr/0029), so a test that calls `handle` directly starts
 * with nothing left runnable by the tests before it.
 */
export async function cancelLeftovers(db: Db): Promise<void> {
  await db.turn.updateMany({
    where: { status: { in: [...HOLDS_SESSION_STATUSES] } },
    data: { status: 'cancelled' },
  });
  await db.session.updateMany({
    where: { leaseToken: { not: null } },
    data: { leaseToken: null, leaseOwner: null, leaseExpiresAt: null },
  });
}
