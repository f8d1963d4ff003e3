import type { Agent } from '@prisma/client';
import type { Admission, TurnSteering as TurnControl } from '@switchboard/admission';
import type { Config } from '@switchboard/config';
import { isUuid, newId, type TurnResponse } from '@switchboard/contracts';
import type { LiveWatch } from '@switchboard/live';
import { readTurn, type SessionsRepository, type SqlDb } from '@switchboard/store';
import type { AgentsRepository } from '@switchboard/subagents';
import type { EventStreams, StreamItem } from './event-stream';
import { OPERATOR_PROMPT } from '../protocols/openai-chat/chat-completions';
import type { TurnDetail } from '../api/turn-detail';
import type { TurnWaiter } from './turn-waiter';

export const AGENT_TURNS = Symbol('AGENT_TURNS');

/** Most agents an adapter lists (MCP tools/list): a tenant with more sees the most recent ones. */
export const AGENT_LIST_LIMIT = 500;

/** Why a message could not be admitted into the session a client named. */
export class SessionRefused extends Error {
  constructor(
    readonly reason: 'session_not_found' | 'other_agent' | 'session_closed',
    message: string,
  ) {
    super(message);
    this.name = 'SessionRefused';
  }
}

/** A turn admitted for an adapter, with the session's watch opened before the admission. */
export interface StartedTurn {
  tenantId: string;
  agentId: string;
  sessionId: string;
  turnId: string;
  watch: LiveWatch;
  subscribedBeforeAdmission: boolean;
}

/**
 * The protocol adapters' one way to run an agent (MCP server, A2A; docs/adr/0036, 0037): the same
 * seams POST /v1/chat/completions uses (docs/adr/0016) — a session created through Admission's
 * importSession (or the one the client names, tenant- and agent-checked), the message admitted with
 * operator authority, the turn waited for by the TurnWaiter or followed through the EventStreams,
 * cancelled through TurnControl. No second turn path: the harness worker runs the turn as any other.
 */
export class AgentTurns {
  constructor(
    private readonly o: {
      agents: AgentsRepository;
      sessions: SessionsRepository;
      admission: Admission;
      waiter: TurnWaiter;
      streams: EventStreams;
      control: TurnControl;
      sql: SqlDb;
      detail: TurnDetail;
      config: Config;
    },
  ) {}

  /** The tenant's agents, most recent first (at most AGENT_LIST_LIMIT). */
  async agents(tenantId: string): Promise<Agent[]> {
    const all: Agent[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.o.agents.page(tenantId, after, 200);
      all.push(...page.rows);
      if (!page.more || page.rows.length === 0) break;
      after = page.rows[page.rows.length - 1].id;
    }
    all.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || b.id.localeCompare(a.id));
    return all.slice(0, AGENT_LIST_LIMIT);
  }

  /** The tenant's agent with this id (null for another tenant's, a deleted one, or a non-UUID). */
  agent(tenantId: string, agentId: string): Promise<Agent | null> {
    return this.o.agents.find(tenantId, agentId);
  }

  /**
   * Admits `text` for the agent: into `sessionId` when given (it must be the tenant's, the agent's and
   * open: else SessionRefused and nothing is admitted), else into a new session. The session's watch
   * is opened before the admission (close it when done); admission errors (a paused tenant, …) throw
   * as AppErrors.
   */
  async start(o: {
    tenantId: string;
    agentId: string;
    text: string;
    sessionId?: string;
    createdBy: string;
  }): Promise<StartedTurn> {
    const sessionId = await this.sessionFor(o);
    const watch = this.o.waiter.watch(sessionId);
    const alreadySubscribed = watch.subscription.isReady;
    try {
      const admitted = await this.o.admission.admit({
        tenantId: o.tenantId,
        sessionId,
        ...OPERATOR_PROMPT,
        body: { type: 'text', text: o.text },
        metadata: { via: o.createdBy },
      });
      return {
        tenantId: o.tenantId,
        agentId: o.agentId,
        sessionId,
        turnId: admitted.turnId,
        watch,
        subscribedBeforeAdmission: alreadySubscribed && !admitted.replayed,
      };
    } catch (err) {
      watch.close();
      throw err;
    }
  }

  private async sessionFor(o: {
    tenantId: string;
    agentId: string;
    sessionId?: string;
    createdBy: string;
  }): Promise<string> {
    if (o.sessionId !== undefined) {
      const session = isUuid(o.sessionId) ? await this.o.sessions.find(o.tenantId, o.sessionId) : null;
      if (!session) throw new SessionRefused('session_not_found', `session ${o.sessionId} not found`);
      if (session.agentId !== o.agentId) {
        throw new SessionRefused('other_agent', `session ${o.sessionId} belongs to another agent`);
      }
      if (session.status === 'closed') {
        throw new SessionRefused('session_closed', `session ${o.sessionId} is closed`);
      }
      return o.sessionId;
    }
    const sessionId = newId();
    await this.o.admission.importSession({
      sessionId,
      tenantId: o.tenantId,
      agentId: o.agentId,
      metadata: { createdBy: o.createdBy },
      history: [],
      ...OPERATOR_PROMPT,
      messageMetadata: {},
    });
    return sessionId;
  }

  /**
   * The turn once it ended (or paused for approval, with `orPaused`); undefined at the deadline
   * (WAIT_TIMEOUT_MS from now by default), when the signal fired, or when the gateway shuts down.
   */
  untilEnded(
    t: StartedTurn,
    o: { signal?: AbortSignal; deadline?: number; orPaused?: boolean } = {},
  ): Promise<TurnResponse | undefined> {
    return this.o.waiter.untilEnded(t.watch, {
      tenantId: t.tenantId,
      turnId: t.turnId,
      deadline: o.deadline ?? Date.now() + this.o.config.WAIT_TIMEOUT_MS,
      signal: o.signal,
      subscribedBeforeAdmission: t.subscribedBeforeAdmission,
      orPaused: o.orPaused,
    });
  }

  /** Starts listening to a session (before something that must not be missed); close it when done. */
  watch(sessionId: string): LiveWatch {
    return this.o.waiter.watch(sessionId);
  }

  /** The turn's events, journal then live, until its terminal event (the seam of docs/adr/0015). */
  events(
    t: Pick<StartedTurn, 'sessionId' | 'turnId'> & { watch?: LiveWatch },
    signal: AbortSignal,
  ): AsyncGenerator<StreamItem, void, undefined> {
    return this.o.streams.events({
      sessionId: t.sessionId,
      turnId: t.turnId,
      after: 0,
      signal,
      idleMs: this.o.config.SSE_HEARTBEAT_MS,
      watch: t.watch,
    });
  }

  /** The turn as GET /v1/turns/:id presents it, in whatever state; undefined when not the tenant's. */
  async turn(tenantId: string, turnId: string): Promise<TurnResponse | undefined> {
    if (!isUuid(turnId)) return undefined;
    const turn = await readTurn(this.o.sql, tenantId, turnId);
    return turn ? this.o.detail(tenantId, turn) : undefined;
  }

  /** The turn once ended, as GET /v1/turns/:id presents it; undefined while it has not. */
  ended(tenantId: string, turnId: string): Promise<TurnResponse | undefined> {
    return this.o.waiter.ended(tenantId, turnId);
  }

  /** Cancels the turn (and its sub-agents) as POST /v1/turns/:id/cancel does; undefined when not the tenant's. */
  cancel(tenantId: string, turnId: string, reason: string) {
    return this.o.control.cancel(tenantId, turnId, reason);
  }

  /** How long an adapter holds a request for a turn (WAIT_TIMEOUT_MS). */
  get waitTimeoutMs(): number {
    return this.o.config.WAIT_TIMEOUT_MS;
  }

  /** Aborted when the gateway begins to shut down. */
  get shutdown(): AbortSignal {
    return this.o.waiter.shutdown;
  }
}
