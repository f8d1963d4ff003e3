import type { Agent, Message, Session, Turn } from '@prisma/client';
import { ENDED_STATUSES, isUuid } from '@switchboard/contracts';
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
    q: {
      graphId?: string;
      name?: string;
      limit: number;
      offset: number;
      sortBy: string;
      desc: boolean;
      /** Only these agents (a key limited to agents, docs/adr/0066). */
      agentIds?: string[];
    },
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
        ...(q.agentIds ? { id: { in: q.agentIds } } : {}),
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
      /** Only these agents' sessions (a key limited to agents, docs/adr/0066). */
      agentIds?: string[];
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
        ...(q.agentId ? { agentId: q.agentId } : q.agentIds ? { agentId: { in: q.agentIds } } : {}),
        AND: Object.entries(q.metadata).map(([key, value]) => ({
          metadata: { path: [key], equals: value as Prisma.InputJsonValue },
        })),
      },
      orderBy: [{ [by]: q.desc ? 'desc' : 'asc' }, { id: 'asc' }],
      skip: q.offset,
      take: q.limit,
    });
  }

  /**
   * The thread's status turns: the newest still in its history (a rewind leaves the later ones out,
   * docs/adr/0053), and every one that has not ended, newest first.
   */
  async statusTurns(sessionId: string): Promise<Turn[]> {
    const [newest, open] = await Promise.all([
      this.db.turn.findFirst({ where: { sessionId, rewoundAt: null }, orderBy: { seq: 'desc' } }),
      this.db.turn.findMany({ where: { sessionId, status: { in: UNFINISHED } }, orderBy: { seq: 'desc' } }),
    ]);
    const all = [...(newest ? [newest] : []), ...open.filter((t) => t.id !== newest?.id)];
    return all.sort((a, b) => b.seq - a.seq);
  }

  /** The thread's current transcript, oldest first: its newest STATE_MESSAGES entries, rewound turns' left out. */
  async transcript(sessionId: string): Promise<Message[]> {
    const rewound = await this.db.turn.findMany({
      where: { sessionId, rewoundAt: { not: null } },
      select: { seq: true },
    });
    return this.transcriptThrough(
      sessionId,
      undefined,
      rewound.map((t) => t.seq),
    );
  }

  /**
   * The newest STATE_MESSAGES transcript entries up to turn seq `throughSeq` (all when undefined)
   * but those of the turn seqs `leaving` (rewound turns off the line), oldest first.
   */
  async transcriptThrough(
    sessionId: string,
    throughSeq: number | undefined,
    leaving: readonly number[],
  ): Promise<Message[]> {
    const rows = await this.db.message.findMany({
      where: {
        sessionId,
        AND: [
          ...(throughSeq !== undefined ? [{ turnSeq: { lte: throughSeq } }] : []),
          ...(leaving.length > 0 ? [{ turnSeq: { notIn: [...leaving] } }] : []),
        ],
      },
      orderBy: [{ turnSeq: 'desc' }, { position: 'desc' }],
      take: STATE_MESSAGES,
    });
    return rows.reverse();
  }

  /** Every transcript entry of the turn seqs `fromSeq`..`toSeq`, of every branch, in transcript order. */
  messagesWithin(sessionId: string, fromSeq: number, toSeq: number): Promise<Message[]> {
    return this.db.message.findMany({
      where: { sessionId, turnSeq: { gte: fromSeq, lte: toSeq } },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
    });
  }

  /** The session's turns as its checkpoint tree needs them (docs/adr/0038, time travel), oldest first. */
  turnLinks(sessionId: string): Promise<{ id: string; seq: number; rewoundAt: Date | null }[]> {
    return this.db.turn.findMany({
      where: { sessionId },
      select: { id: true, seq: true, rewoundAt: true },
      orderBy: { seq: 'asc' },
    });
  }

  /**
   * Where a copy of the thread forks the session (docs/adr/0053): after the newest ended turn of its
   * history; before the oldest turn when none of its history has ended (an empty copy: every turn
   * rewound, or the first one not ended yet, which the fork refuses); null for a session without turns.
   */
  async copyPoint(sessionId: string): Promise<{ turnId: string; position: 'after' | 'before' } | null> {
    const [ended, first] = await Promise.all([
      this.db.turn.findFirst({
        where: { sessionId, rewoundAt: null, status: { in: [...ENDED_STATUSES] } },
        orderBy: { seq: 'desc' },
        select: { id: true },
      }),
      this.db.turn.findFirst({ where: { sessionId }, orderBy: { seq: 'asc' }, select: { id: true } }),
    ]);
    if (ended) return { turnId: ended.id, position: 'after' };
    return first ? { turnId: first.id, position: 'before' } : null;
  }

  /** Turns of the session by id. */
  turnsByIds(sessionId: string, ids: string[]): Promise<Turn[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.db.turn.findMany({ where: { sessionId, id: { in: ids } } });
  }

  /** A transcript entry of the session (a turn's input). */
  message(sessionId: string, id: string): Promise<Message | null> {
    return this.db.message.findFirst({ where: { sessionId, id } });
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
