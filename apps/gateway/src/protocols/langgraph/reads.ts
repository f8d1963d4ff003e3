import type { Agent, Message, Session, Turn } from '@prisma/client';
import { isUuid } from '@switchboard/contracts';
import type { Db, Prisma } from '@switchboard/database';
import type { ApprovalRow } from '@switchboard/protocols';
import { clientCallId } from '@switchboard/store';

/** Turn statuses that have not ended. */
const UNFINISHED = ['queued', 'running', 'awaiting_approval', 'awaiting_subagent', 'awaiting_client_tool'];
/** Transcript entries a thread's state shows at most (the newest). */
export const STATE_MESSAGES = 1000;

/**
 * What the LangGraph adapter reads (docs/adr/0038): agents as assistants, sessions as threads, turns
 * as runs, pending approvals as interrupts. Every read is scoped by tenant.
 */
export class LangGraphReads {
  constructor(private readonly db: Db) {}

  /** An agent by id, or by name (the most recent when names repeat), as `/v1/chat/completions`' `model`. */
  agent(tenantId: string, idOrName: string): Promise<Agent | null> {
    return this.db.agent.findFirst({
      where: {
        tenantId,
        deletedAt: null,
        OR: [{ name: idOrName }, ...(isUuid(idOrName) ? [{ id: idOrName }] : [])],
      },
      orderBy: { createdAt: 'desc' },
    });
  }

  agentsById(tenantId: string, ids: string[]): Promise<Agent[]> {
    return this.db.agent.findMany({ where: { tenantId, id: { in: ids } } });
  }

  agents(
    tenantId: string,
    q: { graphId?: string; name?: string; limit: number; offset: number; sortBy: string; desc: boolean },
  ): Promise<Agent[]> {
    const by = {
      assistant_id: 'id',
      graph_id: 'name',
      name: 'name',
      created_at: 'createdAt',
      updated_at: 'updatedAt',
    }[q.sortBy] as 'id' | 'name' | 'createdAt' | 'updatedAt';
    return this.db.agent.findMany({
      where: {
        tenantId,
        deletedAt: null,
        ...(q.graphId !== undefined || q.name !== undefined ? { name: q.graphId ?? q.name } : {}),
      },
      orderBy: [{ [by]: q.desc ? 'desc' : 'asc' }, { id: 'asc' }],
      skip: q.offset,
      take: q.limit,
    });
  }

  session(tenantId: string, id: string): Promise<Session | null> {
    if (!isUuid(id)) return Promise.resolve(null);
    return this.db.session.findFirst({ where: { id, tenantId } });
  }

  /** A session by id alone: for a stream whose thread was already checked for the tenant. */
  sessionById(id: string): Promise<Session | null> {
    return this.db.session.findUnique({ where: { id } });
  }

  sessions(
    tenantId: string,
    q: {
      ids?: string[];
      agentId?: string;
      metadata: Record<string, unknown>;
      limit: number;
      offset: number;
      sortBy: string;
      desc: boolean;
    },
  ): Promise<Session[]> {
    const by = { thread_id: 'id', status: 'createdAt', created_at: 'createdAt', updated_at: 'updatedAt' }[
      q.sortBy
    ] as 'id' | 'createdAt' | 'updatedAt';
    return this.db.session.findMany({
      where: {
        tenantId,
        parentSessionId: null,
        ...(q.ids ? { id: { in: q.ids } } : {}),
        ...(q.agentId ? { agentId: q.agentId } : {}),
        AND: Object.entries(q.metadata).map(([key, value]) => ({
          metadata: { path: [key], equals: value as Prisma.InputJsonValue },
        })),
      },
      orderBy: [{ [by]: q.desc ? 'desc' : 'asc' }, { id: 'asc' }],
      skip: q.offset,
      take: q.limit,
    });
  }

  /** The thread's status turns: the newest, and every one that has not ended, newest first. */
  async statusTurns(sessionId: string): Promise<Turn[]> {
    const [newest, open] = await Promise.all([
      this.db.turn.findFirst({ where: { sessionId }, orderBy: { seq: 'desc' } }),
      this.db.turn.findMany({ where: { sessionId, status: { in: UNFINISHED } }, orderBy: { seq: 'desc' } }),
    ]);
    const all = [...(newest ? [newest] : []), ...open.filter((t) => t.id !== newest?.id)];
    return all.sort((a, b) => b.seq - a.seq);
  }

  /** The transcript, oldest first: its newest STATE_MESSAGES entries. */
  async transcript(sessionId: string): Promise<Message[]> {
    const rows = await this.db.message.findMany({
      where: { sessionId },
      orderBy: [{ turnSeq: 'desc' }, { position: 'desc' }],
      take: STATE_MESSAGES,
    });
    return rows.reverse();
  }

  /**
   * The transcript as the states of a page of runs need it, oldest first: every entry of the runs
   * `fromSeq`..`toSeq`, after the newest STATE_MESSAGES entries before them (each state shows at most
   * STATE_MESSAGES). One read for the whole page instead of one per state.
   */
  async transcriptThrough(sessionId: string, fromSeq: number, toSeq: number): Promise<Message[]> {
    const [before, within] = await Promise.all([
      this.db.message.findMany({
        where: { sessionId, turnSeq: { lt: fromSeq } },
        orderBy: [{ turnSeq: 'desc' }, { position: 'desc' }],
        take: STATE_MESSAGES,
      }),
      this.db.message.findMany({
        where: { sessionId, turnSeq: { gte: fromSeq, lte: toSeq } },
        orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
      }),
    ]);
    return [...before.reverse(), ...within];
  }

  /**
   * A page of the thread's runs as checkpoints, newest first (docs/adr/0038): those before
   * `beforeSeq`, narrowed to one seq or run id when asked; `take` of them.
   */
  checkpointTurns(
    sessionId: string,
    q: { beforeSeq?: number; seq?: number; turnId?: string; take: number },
  ): Promise<Turn[]> {
    if (q.turnId !== undefined && !isUuid(q.turnId)) return Promise.resolve([]);
    return this.db.turn.findMany({
      where: {
        sessionId,
        ...(q.turnId !== undefined ? { id: q.turnId } : {}),
        AND: [
          ...(q.beforeSeq !== undefined ? [{ seq: { lt: q.beforeSeq } }] : []),
          ...(q.seq !== undefined ? [{ seq: q.seq }] : []),
        ],
      },
      orderBy: { seq: 'desc' },
      take: q.take,
    });
  }

  /** The run before the one at `seq`: its parent checkpoint. */
  async previousTurnId(sessionId: string, seq: number): Promise<string | null> {
    const t = await this.db.turn.findFirst({
      where: { sessionId, seq: { lt: seq } },
      orderBy: { seq: 'desc' },
      select: { id: true },
    });
    return t?.id ?? null;
  }

  /**
   * What the thread's turns wait for, as interrupts: approvals waiting for a decision, and calls of
   * the client's tools waiting for their results (docs/adr/0047: the same table, `kind` apart), of a
   * turn that still waits for them.
   */
  async pending(sessionId: string): Promise<ApprovalRow[]> {
    const rows = await this.db.approval.findMany({
      where: {
        sessionId,
        status: 'pending',
        OR: [
          { kind: 'approval', turn: { status: 'awaiting_approval' } },
          { kind: 'client_tool', turn: { status: { in: ['awaiting_approval', 'awaiting_client_tool'] } } },
        ],
      },
      orderBy: { id: 'asc' },
    });
    return rows.map((a) => ({ ...a, clientCallId: a.kind === 'client_tool' ? clientCallId(a.id) : null }));
  }

  turn(tenantId: string, sessionId: string, turnId: string): Promise<Turn | null> {
    if (!isUuid(turnId)) return Promise.resolve(null);
    return this.db.turn.findFirst({ where: { id: turnId, sessionId, tenantId } });
  }

  turnById(tenantId: string, turnId: string): Promise<Turn | null> {
    return this.db.turn.findFirst({ where: { id: turnId, tenantId } });
  }

  turns(sessionId: string, q: { statuses?: string[]; limit: number; offset: number }): Promise<Turn[]> {
    return this.db.turn.findMany({
      where: { sessionId, ...(q.statuses ? { status: { in: q.statuses } } : {}) },
      orderBy: { seq: 'desc' },
      skip: q.offset,
      take: q.limit,
    });
  }

  /** The session's last journal seq: a resumed run's stream starts after it. */
  async lastEventSeq(sessionId: string): Promise<number> {
    const s = await this.db.session.findUnique({ where: { id: sessionId }, select: { lastEventSeq: true } });
    return s?.lastEventSeq ?? 0;
  }
}
