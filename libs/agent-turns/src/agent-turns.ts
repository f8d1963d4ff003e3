import type { Agent, Session } from '@prisma/client';
import type { Admission, Admitted, AdmitInput, ImportedMessage, TurnSteering } from '@switchboard/admission';
import type { Config } from '@switchboard/config';
import {
  isUuid,
  newId,
  SessionRefused,
  type MessageImage,
  type ResponseFormat,
  type ToolChoice,
  type TurnResponse,
  type CancelCause,
} from '@switchboard/contracts';
import type { LiveWatch } from '@switchboard/live';
import { readTurn, type ClientToolCall, type SessionsRepository, type SqlDb } from '@switchboard/store';
import type { ClientTools } from '@switchboard/turns';
import { answerRefusal, checkClientTools, checkToolChoice, type ClientToolDeclaration } from './client-tools';
import type { AgentsRepository } from '@switchboard/subagents';
import type { EventStreams, StreamItem } from './event-streams';
import { OPERATOR_PROMPT } from './operator-prompt';
import { sessionIdForKey } from './session-key';
import type { TurnDetail } from './turn-detail';
import type { TurnWaiter } from './turn-waiter';
export { SessionRefused, type SessionRefusal } from '@switchboard/contracts';

export const AGENT_TURNS = Symbol('AGENT_TURNS');

/** Most agents an adapter lists (MCP tools/list): a tenant with more sees the most recent ones. */
export const AGENT_LIST_LIMIT = 500;

/**
 * Which session a request's message goes into:
 * - `{ sessionId }`: the one the client names (it must be the tenant's, the agent's and open);
 * - `{ afterTurnId }`: the session a previous turn ran in (Responses' `previous_response_id`);
 * - `{ new }`: a new session, seeded with the request's earlier messages (`history`), its id derived
 *   from an Idempotency-Key (`key`, so a retry lands in it again), given (`id`: a LangGraph thread
 *   named by its client; when it exists already it is continued as a named one), or fresh.
 */
export type SessionRequest = { sessionId: string } | { afterTurnId: string } | { new: NewSession };

export interface NewSession {
  /** Recorded in the session's metadata as `createdBy` (unless `metadata` is given). */
  createdBy: string;
  /** The session's metadata; default `{ createdBy }`. */
  metadata?: Record<string, unknown>;
  /** The request's earlier messages: the session's first turn, ended as imported. */
  history?: readonly ImportedMessage[];
  /** Each imported message's `metadata.imported` (the route that imported it). */
  importedAs?: string;
  /** The session's id, chosen by the client (a LangGraph thread id). */
  id?: string;
  /** The request's Idempotency-Key, and the route it was sent to: the session's id derives from both. */
  key?: { idempotencyKey: string; scope?: string };
}

/** What a protocol admits: the message's text and what it carries (operator authority always). */
export interface TurnRequest {
  tenantId: string;
  sessionId: string;
  text: string;
  /** Images of the message, for a model that takes them (the adapter checked; docs/adr/0035). */
  images?: MessageImage[];
  metadata?: Record<string, unknown>;
  idempotencyKey?: string;
  multitask?: AdmitInput['multitask'];
  priority?: AdmitInput['priority'];
  correlationId?: string;
  /** The structured output the answer must have (docs/adr/0048), checked by the adapter; absent: text. */
  responseFormat?: ResponseFormat | null;
  /** Tools the client runs (docs/adr/0047), checked by `clientToolsFor`: kept with the turn. */
  clientTools?: ClientToolDeclaration[];
  /** The tool choice forced for the turn's first round, checked by `toolChoiceFor`; absent: auto. */
  toolChoice?: ToolChoice;
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

/** A turn admitted into a resolved session, its watch opened before the admission (close it when done). */
export interface AdmittedTurn extends Omit<StartedTurn, 'agentId'> {
  messageId: string;
  status: string;
  /** An earlier admission with the same Idempotency-Key was returned. */
  replayed: boolean;
}

/**
 * How a hold ended: the turn settled (ended, or with `orPaused` paused for approval), or it had not
 * when the client left (`left`), the deadline passed (`deadline`) or the gateway began to shut down
 * (`shutdown`); the turn goes on either way.
 */
export type Held =
  { settled: true; turn: TurnResponse } | { settled: false; why: 'left' | 'deadline' | 'shutdown' };

/**
 * The one way in for a turn (docs/adr/0016, 0035–0038): every protocol — the native
 * POST /v1/sessions/:id/messages, the OpenAI-compatible facade, Open Responses, LangGraph, the MCP
 * server and A2A — resolves its agent and its session here, admits its message here (operator
 * authority, through Admission: a stopped agent or a paused tenant is refused there before anything
 * is written, a new session included), holds the request here until the turn settles (the
 * TurnWaiter: one wait, with a deadline and an AbortSignal), follows it through the EventStreams
 * and cancels it through TurnSteering. No second turn path: the harness worker runs the turn as any
 * other. Plain TypeScript; the gateway wires it as a Nest provider (AGENT_TURNS).
 */
export class AgentTurns {
  constructor(
    private readonly o: {
      agents: AgentsRepository;
      sessions: SessionsRepository;
      admission: Admission;
      waiter: TurnWaiter;
      streams: EventStreams;
      control: TurnSteering;
      sql: SqlDb;
      detail: TurnDetail;
      config: Config;
      /** Client tool waits (docs/adr/0047): answered here, resumed once. */
      clientTools?: ClientTools;
      /** Every tool name the deployment may offer an agent (the tool registry's). */
      toolNames?: () => Iterable<string>;
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

  /** The tenant's agent a name or an id names (the most recent when names repeat); undefined when none. */
  agentNamed(tenantId: string, nameOrId: string): Promise<string | undefined> {
    return this.o.agents.idByModel(tenantId, nameOrId);
  }

  /**
   * Admits `text` for the agent: into `sessionId` when given (it must be the tenant's, the agent's and
   * open: else SessionRefused and nothing is admitted), else into a new session. The session's watch
   * is opened before the admission (close it when done); admission errors (a paused tenant, a stopped
   * agent, …) throw as AppErrors, with nothing written.
   */
  async start(o: {
    tenantId: string;
    agentId: string;
    text: string;
    sessionId?: string;
    createdBy: string;
    /** Tools the client runs (docs/adr/0047), checked by `clientToolsFor` first. */
    clientTools?: ClientToolDeclaration[];
    /** The agents a key limited to agents reaches (docs/adr/0066): another's session is a missing one. */
    reach?: string[];
  }): Promise<StartedTurn> {
    const sessionId = await this.session(
      o.tenantId,
      o.agentId,
      o.sessionId !== undefined ? { sessionId: o.sessionId } : { new: { createdBy: o.createdBy } },
      o.reach,
    );
    const admitted = await this.admit({
      tenantId: o.tenantId,
      sessionId,
      text: o.text,
      metadata: { via: o.createdBy },
      ...(o.clientTools?.length ? { clientTools: o.clientTools } : {}),
    });
    return { ...admitted, agentId: o.agentId };
  }

  /**
   * The session a request's message goes into (`SessionRequest`): its id, or SessionRefused. A new
   * session is made through Admission's `importSession`, which refuses a paused tenant and a stopped
   * agent before it writes anything.
   */
  async session(
    tenantId: string,
    agentId: string,
    r: SessionRequest,
    /**
     * The agents a key limited to agents reaches (docs/adr/0066): another agent's session or turn is
     * refused as a missing one, never as "another agent's" (which would tell it exists).
     */
    reach?: string[],
  ): Promise<string> {
    if ('sessionId' in r) return this.continued(tenantId, agentId, r.sessionId, 'session_not_found', reach);
    if ('afterTurnId' in r) {
      const turn = isUuid(r.afterTurnId) ? await readTurn(this.o.sql, tenantId, r.afterTurnId) : undefined;
      if (!turn || (reach && !reach.includes(turn.agentId.toLowerCase())))
        throw new SessionRefused('previous_not_found', `turn ${r.afterTurnId} not found`);
      return this.continued(tenantId, agentId, turn.sessionId, 'previous_not_found', reach);
    }
    const n = r.new;
    const sessionId =
      n.id ?? (n.key ? sessionIdForKey(tenantId, n.key.idempotencyKey, n.key.scope) : newId());
    const imported = await this.o.admission.importSession({
      sessionId,
      tenantId,
      agentId,
      metadata: n.metadata ?? { createdBy: n.createdBy },
      history: n.history ?? [],
      // The caller wrote both sides of this history: the operator's provenance, as `admit` gives it.
      ...OPERATOR_PROMPT,
      messageMetadata: n.importedAs !== undefined ? { imported: n.importedAs } : {},
    });
    if (imported === 'created') return sessionId;
    // A session the client named exists already (or is another tenant's): continued as a named one.
    if (n.id !== undefined) return this.continued(tenantId, agentId, sessionId, 'session_not_found', reach);
    // The key's session exists of another agent: the same key sent for another request.
    if (imported === 'other_agent') {
      throw new SessionRefused(
        'key_reused',
        'this Idempotency-Key was already used with a different request: use a new key for a new message',
      );
    }
    return sessionId;
  }

  /**
   * A new, empty session with the id a client chose (a LangGraph thread created on its own, as
   * POST /v1/sessions makes one: no message is admitted, so nothing is refused); null when the id is taken.
   */
  openSession(s: {
    id: string;
    tenantId: string;
    agentId: string;
    metadata: Record<string, unknown>;
  }): Promise<Session | null> {
    return this.o.sessions.createWithId(s);
  }

  private async continued(
    tenantId: string,
    agentId: string,
    sessionId: string,
    missing: 'session_not_found' | 'previous_not_found',
    reach?: string[],
  ): Promise<string> {
    const found = isUuid(sessionId) ? await this.o.sessions.find(tenantId, sessionId) : null;
    const session = found && (!reach || reach.includes(found.agentId.toLowerCase())) ? found : null;
    if (!session) throw new SessionRefused(missing, `session ${sessionId} not found`);
    if (session.agentId !== agentId) {
      throw new SessionRefused(
        'other_agent',
        `session ${sessionId} belongs to another agent`,
        session.agentId,
      );
    }
    if (session.status === 'closed') {
      throw new SessionRefused('session_closed', `session ${sessionId} is closed`);
    }
    return session.id;
  }

  /**
   * Admits the message into a resolved session as an operator's prompt, the session's watch opened
   * first (its SUBSCRIBE overlaps the admission statement; close it when done, also on a throw: it is
   * closed here then). Admission's refusals (a stopped agent, a paused tenant, a closed session, a
   * reused key, …) throw as AppErrors with nothing written.
   */
  admit(r: TurnRequest): Promise<AdmittedTurn>;
  /** Without a watch: nothing follows the turn here (an admission answered 202 at once). */
  admit(
    r: TurnRequest,
    o: { watch: false },
  ): Promise<Omit<AdmittedTurn, 'watch' | 'subscribedBeforeAdmission'>>;
  async admit(
    r: TurnRequest,
    o: { watch?: boolean } = {},
  ): Promise<AdmittedTurn | Omit<AdmittedTurn, 'watch' | 'subscribedBeforeAdmission'>> {
    const watch = o.watch === false ? undefined : this.o.waiter.watch(r.sessionId);
    const alreadySubscribed = watch?.subscription.isReady ?? false;
    try {
      const admitted: Admitted = await this.o.admission.admit({
        tenantId: r.tenantId,
        sessionId: r.sessionId,
        ...OPERATOR_PROMPT,
        body: r.images?.length
          ? { type: 'text', text: r.text, images: r.images }
          : { type: 'text', text: r.text },
        metadata: r.metadata,
        idempotencyKey: r.idempotencyKey,
        multitask: r.multitask,
        priority: r.priority,
        correlationId: r.correlationId,
        responseFormat: r.responseFormat,
        ...(r.clientTools?.length ? { clientTools: r.clientTools } : {}),
        ...(r.toolChoice ? { toolChoice: r.toolChoice } : {}),
      });
      const turn = {
        tenantId: r.tenantId,
        sessionId: r.sessionId,
        turnId: admitted.turnId,
        messageId: admitted.messageId,
        status: admitted.status,
        replayed: admitted.replayed,
      };
      return watch
        ? { ...turn, watch, subscribedBeforeAdmission: alreadySubscribed && !admitted.replayed }
        : turn;
    } catch (err) {
      watch?.close();
      throw err;
    }
  }

  /**
   * Holds until the turn settles: it ended (or, with `orPaused`, paused for approval), or why not —
   * the signal fired (the client left), the deadline (WAIT_TIMEOUT_MS from now by default) passed,
   * or the gateway began to shut down. The one wait every protocol's hold goes through.
   */
  async hold(
    t: Pick<AdmittedTurn, 'tenantId' | 'turnId' | 'watch' | 'subscribedBeforeAdmission'>,
    o: { signal?: AbortSignal; deadline?: number; orPaused?: boolean; orClientTool?: boolean } = {},
  ): Promise<Held> {
    const turn = await this.untilEnded(t, o);
    if (turn) return { settled: true, turn };
    if (o.signal?.aborted) return { settled: false, why: 'left' };
    return { settled: false, why: this.shutdown.aborted ? 'shutdown' : 'deadline' };
  }

  /**
   * The turn once it ended (or paused for approval, with `orPaused`); undefined at the deadline
   * (WAIT_TIMEOUT_MS from now by default), when the signal fired, or when the gateway shuts down.
   */
  untilEnded(
    t: Pick<AdmittedTurn, 'tenantId' | 'turnId' | 'watch' | 'subscribedBeforeAdmission'>,
    o: { signal?: AbortSignal; deadline?: number; orPaused?: boolean; orClientTool?: boolean } = {},
  ): Promise<TurnResponse | undefined> {
    return this.o.waiter.untilEnded(t.watch, {
      tenantId: t.tenantId,
      turnId: t.turnId,
      deadline: o.deadline ?? Date.now() + this.o.config.WAIT_TIMEOUT_MS,
      signal: o.signal,
      subscribedBeforeAdmission: t.subscribedBeforeAdmission,
      orPaused: o.orPaused,
      orClientTool: o.orClientTool,
    });
  }

  /** Starts listening to a session (before something that must not be missed); close it when done. */
  watch(sessionId: string): LiveWatch {
    return this.o.waiter.watch(sessionId);
  }

  /** The turn's events, journal then live, until its terminal event (the seam of docs/adr/0015). */
  events(
    t: Pick<StartedTurn, 'sessionId' | 'turnId'> & { watch?: LiveWatch; after?: number },
    signal: AbortSignal,
  ): AsyncGenerator<StreamItem, void, undefined> {
    return this.o.streams.events({
      sessionId: t.sessionId,
      turnId: t.turnId,
      // From the journal seq given (a resumed turn's events follow the answer's), else from its start.
      after: t.after ?? 0,
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
  cancel(tenantId: string, turnId: string, cause: CancelCause) {
    return this.o.control.cancel(tenantId, turnId, cause);
  }

  /**
   * A request's client tools checked for the agent (docs/adr/0047): names valid and distinct, none
   * the agent's (its own tools, and every tool the deployment may offer it: built-ins, memory,
   * sub-agents), schemas valid. `param` names a declaration in the protocol's terms. Throws
   * ClientToolRefused (a 4xx) before anything is admitted.
   */
  clientToolsFor(
    agent: Pick<Agent, 'tools'>,
    declared: readonly ClientToolDeclaration[],
    param: (i: number, field: string) => string,
  ): ClientToolDeclaration[] {
    const taken = new Set([...agent.tools, ...(this.o.toolNames?.() ?? [])]);
    return checkClientTools(declared, taken, param);
  }

  /**
   * A request's forced tool choice checked against what the turn offers (docs/adr/0047): `required`
   * needs a tool to call (the client's or the agent's), a named tool must be one the client declared
   * (the agent's own tools are its model's to choose). `param` names the field in the protocol's
   * terms. Throws ClientToolRefused (`invalid_tool_choice`, 400) before anything is admitted.
   */
  toolChoiceFor(
    agent: Pick<Agent, 'tools'>,
    declared: readonly ClientToolDeclaration[],
    choice: ToolChoice | undefined,
    param: string,
  ): ToolChoice | undefined {
    return checkToolChoice(choice, declared, agent.tools.length, param);
  }

  /**
   * Answers client tool calls (docs/adr/0047) by the ids handed out (`call_…`): all of one turn's
   * pending calls at once. Once committed, one job resumes the turn; the same answer again changes
   * nothing and returns the same turn. Throws ClientToolRefused (unknown, missing, expired, …),
   * nothing stored. `turnId`: the calls must be that turn's (a native route names it).
   */
  async answerClientTools(a: {
    tenantId: string;
    turnId?: string;
    sessionId?: string;
    results: { callId: string; output: string }[];
    answeredBy: string;
  }): Promise<{ tenantId: string; sessionId: string; turnId: string; replayed: boolean; afterSeq: number }> {
    if (!this.o.clientTools) throw new Error('client tools are not wired');
    const badIds = [a.turnId, a.sessionId].some((id) => id !== undefined && !isUuid(id));
    if (badIds) {
      const refused = answerRefusal({ kind: 'unknown', callIds: a.results.map((r) => r.callId) });
      if (refused) throw refused;
    }
    const outcome = await this.o.clientTools.answer(a);
    const refused = answerRefusal(outcome);
    if (refused) throw refused;
    if (outcome.kind !== 'answered' && outcome.kind !== 'replayed') throw new Error('unreachable');
    return {
      tenantId: a.tenantId,
      sessionId: outcome.sessionId,
      turnId: outcome.turnId,
      replayed: outcome.kind === 'replayed',
      // The journal seq the answer committed (the first time, for a replay): what follows it is the
      // resumed run's, so the same answer again names the same continuation.
      afterSeq:
        outcome.kind === 'answered' ? Math.max(0, ...outcome.events.map((e) => e.seq)) : outcome.afterSeq,
    };
  }

  /** A turn's client tool calls, pending ones to hand out (docs/adr/0047). */
  clientToolCalls(tenantId: string, turnId: string): Promise<ClientToolCall[]> {
    if (!this.o.clientTools) return Promise.resolve([]);
    return this.o.clientTools.store.calls(tenantId, turnId);
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
