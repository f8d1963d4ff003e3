import type { Event, Message, Session } from '@prisma/client';
import { AppError, newId } from '@switchboard/contracts';
import type { Db, Prisma } from '@switchboard/database';
import type { TurnRead } from './turn-reads';

/** One page of rows by a key, and whether another page follows (the caller encodes its cursor). */
export interface Page<T> {
  rows: T[];
  more: boolean;
}

/** `take: limit + 1` rows → the page and whether more follow. */
export const pageOf = <T>(rows: T[], limit: number): Page<T> => ({
  rows: rows.slice(0, limit),
  more: rows.length > limit,
});

/**
 * Sessions and what a client reads of them: the transcript (`messages`) and the journal (`events`).
 * The gateway's CRUD, on Prisma (docs/adr/0010: the turn's own statements are in `TurnStore`).
 * Every read is scoped by tenant; a session of another tenant is not found.
 */
export class SessionsRepository {
  constructor(private readonly db: Db) {}

  create(s: {
    tenantId: string;
    agentId: string;
    title: string | null;
    metadata: Record<string, unknown>;
    /** The agent version it is pinned to (docs/adr/0061); absent: it follows the latest. */
    agentVersion?: number | null;
  }): Promise<Session> {
    return this.db.session.create({
      data: {
        id: newId(),
        tenantId: s.tenantId,
        agentId: s.agentId,
        title: s.title,
        metadata: s.metadata as Prisma.InputJsonValue,
        agentVersion: s.agentVersion ?? null,
      },
    });
  }

  /**
   * Re-pins the session to an agent version (null: the latest), docs/adr/0061. A change of the version it
   * runs on clears the persisted system prompt so the next turn renders it with that version's instructions.
   * Returns null when the session is not the tenant's; a version the agent does not have is a 400.
   */
  async pin(tenantId: string, sessionId: string, version: number | null): Promise<Session | null> {
    return this.db.$transaction(async (tx) => {
      const session = await tx.session.findFirst({ where: { id: sessionId, tenantId } });
      if (!session) return null;
      if (version !== null) {
        const found = await tx.agentVersion.findFirst({
          where: { tenantId, agentId: session.agentId, version },
        });
        if (!found) {
          const message = `unknown agent version: ${version}`;
          throw new AppError('validation_failed', message, { issues: [{ path: 'agentVersion', message }] });
        }
      }
      if (session.agentVersion === version) return session;
      const agent = await tx.agent.findUnique({ where: { id: session.agentId }, select: { version: true } });
      const latest = agent?.version ?? 1;
      // Its turns run on another version from now on: the prompt is rendered again with its instructions.
      const otherVersion = (session.agentVersion ?? latest) !== (version ?? latest);
      return tx.session.update({
        where: { id: session.id },
        data: { agentVersion: version, ...(otherVersion ? { systemPrompt: null } : {}) },
      });
    });
  }

  /**
   * A session with the id its client chose (a LangGraph thread id); null when the id is taken (by
   * this tenant or another).
   */
  async createWithId(s: {
    id: string;
    tenantId: string;
    agentId: string;
    metadata: Record<string, unknown>;
  }): Promise<Session | null> {
    const rows = await this.db.session.createManyAndReturn({
      data: [
        {
          id: s.id,
          tenantId: s.tenantId,
          agentId: s.agentId,
          title: null,
          metadata: s.metadata as Prisma.InputJsonValue,
        },
      ],
      skipDuplicates: true,
    });
    return rows[0] ?? null;
  }

  /** A message's metadata (what a protocol recorded of its request); undefined when not the tenant's. */
  async messageMetadata(tenantId: string, messageId: string): Promise<Prisma.JsonValue | undefined> {
    const m = await this.db.message.findFirst({
      where: { id: messageId, tenantId },
      select: { metadata: true },
    });
    return m?.metadata;
  }

  /**
   * A turn's input: its input message, and with `importedAs` the messages a route imported into the
   * session's first turn (`metadata.imported`), in the session's order.
   */
  turnInput(
    tenantId: string,
    sessionId: string,
    inputMessageId: string,
    importedAs?: string,
  ): Promise<Message[]> {
    return this.db.message.findMany({
      where: {
        tenantId,
        sessionId,
        OR: [
          { id: inputMessageId },
          ...(importedAs !== undefined
            ? [{ turnSeq: 1, metadata: { path: ['imported'], equals: importedAs } }]
            : []),
        ],
      },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
    });
  }

  /** By id, after the cursor's id; of one agent and one status when given. One query. */
  async page(
    tenantId: string,
    afterId: string | undefined,
    limit: number,
    filter: { agentId?: string; status?: string } = {},
  ): Promise<Page<Session>> {
    const rows = await this.db.session.findMany({
      where: {
        tenantId,
        ...(afterId !== undefined ? { id: { gt: afterId } } : {}),
        ...(filter.agentId !== undefined ? { agentId: filter.agentId } : {}),
        ...(filter.status !== undefined ? { status: filter.status } : {}),
      },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
    return pageOf(rows, limit);
  }

  find(tenantId: string, id: string): Promise<Session | null> {
    return this.db.session.findFirst({ where: { id, tenantId } });
  }

  /** Closes an open session; a closed one is returned as it is. */
  close(session: Session): Promise<Session> {
    if (session.status === 'closed') return Promise.resolve(session);
    return this.db.session.update({
      where: { id: session.id },
      data: { status: 'closed', closedAt: new Date() },
    });
  }

  /** The transcript in order (turn seq, position), after the cursor's (turn seq, position). */
  async messages(
    sessionId: string,
    after: [turnSeq: number, position: number] | undefined,
    limit: number,
  ): Promise<Page<Message>> {
    const rows = await this.db.message.findMany({
      where: {
        sessionId,
        ...(after
          ? { OR: [{ turnSeq: { gt: after[0] } }, { turnSeq: after[0], position: { gt: after[1] } }] }
          : {}),
      },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
      take: limit + 1,
    });
    return pageOf(rows, limit);
  }

  /**
   * The session's turns by seq after `afterSeq`, rewound ones included (docs/adr/0053), each with its
   * tool calls in the order `findTurn` gives them.
   */
  async turns(sessionId: string, afterSeq: number, limit: number): Promise<Page<TurnRead>> {
    const rows = await this.db.turn.findMany({
      where: { sessionId, seq: { gt: afterSeq } },
      include: { toolCalls: { orderBy: [{ startedAt: 'asc' }, { id: 'asc' }] } },
      orderBy: { seq: 'asc' },
      take: limit + 1,
    });
    return pageOf(rows, limit);
  }

  /**
   * The tenant's turns in these statuses (the ones not ended: seed 000 active runs, docs/adr/0058),
   * oldest first by id (UUIDv7: admission order), after the cursor's id; optionally of one agent or
   * session. Served by the partial index of unfinished turns (tenant_id, status).
   */
  async activeTurns(
    tenantId: string,
    filter: { statuses: readonly string[]; agentId?: string; sessionId?: string },
    afterId: string | undefined,
    limit: number,
  ): Promise<Page<TurnRead>> {
    const rows = await this.db.turn.findMany({
      where: {
        tenantId,
        status: { in: [...filter.statuses] },
        ...(filter.agentId ? { agentId: filter.agentId } : {}),
        ...(filter.sessionId ? { sessionId: filter.sessionId } : {}),
        ...(afterId ? { id: { gt: afterId } } : {}),
      },
      include: { toolCalls: { orderBy: [{ startedAt: 'asc' }, { id: 'asc' }] } },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
    return pageOf(rows, limit);
  }

  /** The journal after `afterSeq`, in seq order, at most `limit` events. */
  events(sessionId: string, afterSeq: number, limit: number): Promise<Event[]> {
    return this.db.event.findMany({
      where: { sessionId, seq: { gt: afterSeq } },
      orderBy: { seq: 'asc' },
      take: limit,
    });
  }
}
