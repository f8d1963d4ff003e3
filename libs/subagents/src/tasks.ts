import type { Queue } from 'bullmq';
import { Admission, type Admitted, type TurnSteering } from '@switchboard/admission';
import {
  cancelCause,
  EventType,
  isEnded,
  Jobs,
  newId,
  TenantPausedError,
  AgentStoppedError,
  deriveAuthorityClass,
  type CancelCause,
  type MessageBody,
  type TraceCarrier,
} from '@switchboard/contracts';
import { contentCipher, poolOf, sealEventData, sealJson, sealText, type Db } from '@switchboard/database';
import { withSpan, type Logger } from '@switchboard/observability';
import { publish, withTimeout } from '@switchboard/queue';
import {
  admitWithin,
  auditInsert,
  descendantsCostUsd,
  ENDED,
  HOLDS_SESSION,
  json,
  ofTenant,
  rejoinPending,
  sql,
  sqlDbFor,
  type CommittedEvent,
  type Sql,
  type SqlDb,
  type SqlRunner,
} from '@switchboard/store';
import type { LivePublisher } from '@switchboard/live';
import { agentMaxUsd, type ParentBudget } from './budget';

/**
 * Sub-agent tasks (docs/adr/0024): a parent turn's spawn call becomes a task row, a child session (or
 * a reused idle one) and the child's admitted message and queued turn, in one transaction; the child
 * runs as its own turn on the queue. Its end is written on the task row by its terminal statement
 * (libs/turns runner), and then `childEnded` tells the parent: `subagent_completed` on the parent's
 * session journal, and the parent's waiting turn back in the queue once every task it waits for ended.
 */

/** Task statuses (seed 002 "Background Task Model"). */
export type TaskStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
const OPEN = sql`('pending', 'running')`;

/** The compact result a parent sees of its child (never the child's transcript). */
export type Handback =
  | { status: 'completed'; result: string }
  | { status: 'incomplete'; reason: string; partial?: string }
  /** The child asked its user (ask_user); the answer through POST /v1/tasks/:id/answer resumes it. */
  | { status: 'awaiting_user'; question: string; options?: string[]; callId: string };

export interface TaskRow {
  id: string;
  tenantId: string;
  agentId: string;
  agentName: string;
  parentTurnId: string | null;
  parentTaskId: string | null;
  parentSessionId: string | null;
  sessionId: string | null;
  childTurnId: string | null;
  callId: string | null;
  status: TaskStatus;
  depth: number;
  blocking: boolean;
  input: { task?: string; context?: string; answers?: Record<string, string> };
  handback: Handback | null;
  output: string | null;
  /** Decimal, 8 places. */
  costUsd: string;
  createdAt: Date;
  completedAt: Date | null;
  closedAt: Date | null;
  /** How the ended task's handback reached its parent (docs/adr/0057); null: not yet. */
  rejoin: Rejoin | null;
  rejoinedAt: Date | null;
  /** The `task_result` message admitted into the parent's session, and the turn it started. */
  rejoinMessageId: string | null;
  rejoinTurnId: string | null;
}

/**
 * How an ended task's handback reached its parent (docs/adr/0057): a parent turn waited for it
 * (`waiting_turn`), a parent's call answered with it (`tool_call`), a `task_result` message was
 * admitted into the parent's session (`task_result`), or nothing is owed (`skipped`: closed by the
 * parent, its spawning turn cancelled, or the parent's own stop cascaded into it).
 */
export type Rejoin = 'waiting_turn' | 'tool_call' | 'task_result' | 'skipped';

/**
 * The child turn's cancel reasons that came from its parent's side (docs/adr/0055): the parent's
 * deadline or budget, the tenant's pause, the agent's stop. Its result is not rejoined: the parent
 * (or its operator) stopped it.
 */
const CASCADED_CANCELS = sql`('deadline', 'budget', 'tenant_paused', 'agent_stopped')`;

const TASK_COLUMNS = sql`k.id, k.tenant_id AS "tenantId", k.agent_id AS "agentId", k.agent_name AS "agentName",
  k.parent_turn_id AS "parentTurnId", k.parent_task_id AS "parentTaskId", k.parent_session_id AS "parentSessionId",
  k.session_id AS "sessionId", k.child_turn_id AS "childTurnId", k.call_id AS "callId", k.status, k.depth,
  k.blocking, k.input, k.handback, k.output, k.cost_usd::text AS "costUsd", k.created_at AS "createdAt",
  k.completed_at AS "completedAt", k.closed_at AS "closedAt", k.rejoin, k.rejoined_at AS "rejoinedAt",
  k.rejoin_message_id AS "rejoinMessageId", k.rejoin_turn_id AS "rejoinTurnId"`;

/** The delegation tools (libs/subagents/src/tools.ts), what a worker-tier agent is never offered. */
export const DELEGATION_TOOLS: readonly string[] = [
  'spawn_subagent',
  'wait_subagent',
  'list_subagents',
  'close_subagent',
  'steer_subagent',
];

/** An agent's own tools, without the delegation tools for a worker-tier agent (seed 000: a worker spawns nothing). */
export function offeredTools(agent: { tier?: string; tools: string[] }, child = false): string[] {
  const own =
    agent.tier === 'worker' ? agent.tools.filter((n) => !DELEGATION_TOOLS.includes(n)) : agent.tools;
  // Every child may ask its user through its parent (awaiting_user handback).
  return child && !own.includes(ASK_USER) ? [...own, ASK_USER] : own;
}

/** The child-only tool that hands back `awaiting_user {question, options}`. */
export const ASK_USER = 'ask_user';

/** The task's child has not asked its user a question it waits on (`awaiting_user` handback). */
const NOT_ASKING = (k: Sql) => sql`coalesce(${k}.handback ->> 'status', '') <> 'awaiting_user'`;

/** What the spawn writes (the caller has checked the tier, the allow-list and the depth). */
export interface SpawnInput {
  tenantId: string;
  parentTurnId: string;
  parentSessionId: string;
  parentTaskId: string | null;
  callId: string;
  agent: { id: string; name: string };
  depth: number;
  task: string;
  context?: string;
  blocking: boolean;
  /** The child turn's cap: its share of the parent's budget (docs/adr/0025); absent: its agent's own. */
  maxUsd?: number;
}

export type SpawnOutcome = { task: TaskRow; created: boolean };

export interface TaskServiceOptions {
  turnsQueue: Queue;
  logger: Logger;
  enqueueTimeoutMs?: number;
  /** The live channel: the parent's subagent_spawned / subagent_completed go out on it after the commit. */
  live?: LivePublisher;
  /** Tells a child's worker that a steer waits to be interjected (docs/adr/0014); without it, its heartbeat finds it. */
  control?: TurnSteering;
  /**
   * Cancels a turn through the cancel path of docs/adr/0014 (TurnSteering.cancel); close_subagent
   * uses it. Answers the turn's status after the request (`running` while its worker stops it).
   */
  cancelTurn?: (
    tenantId: string,
    turnId: string,
    cause: CancelCause,
  ) => Promise<{ status: string } | undefined>;
}

export class TaskService {
  readonly sql: SqlDb;
  private readonly admission: Admission;

  constructor(
    readonly db: Db,
    private readonly o: TaskServiceOptions,
  ) {
    this.sql = sqlDbFor(poolOf(db), 'subagents');
    this.admission = new Admission(db, o.turnsQueue, o.logger, o.control ? { control: o.control } : {});
  }

  /**
   * steer_subagent: an instruction from the parent, which holds operator-like authority over its child,
   * so it is an interjection (docs/adr/0014, 0024): delivered into the child's running turn before its
   * next provider call, or, when none runs, run first in line as the child's next turn. Provenance: the
   * steering parent turn (causation) and the task (metadata). The call's idempotency key makes a re-run
   * admit nothing twice.
   */
  async steer(task: TaskRow, message: string, idempotencyKey: string, fromTurnId: string): Promise<Admitted> {
    return this.admission.admit({
      tenantId: task.tenantId,
      sessionId: task.sessionId!,
      kind: 'internal_followup',
      origin: { kind: 'system', subsystem: 'subagent' },
      body: { type: 'text', text: message },
      deliverySurface: 'runtime_system',
      admissionContext: 'runtime_owned',
      priority: 'interject',
      fromParent: true,
      metadata: { subagent: { taskId: task.id, steer: true, fromTurnId } },
      causationId: fromTurnId,
      idempotencyKey,
    });
  }

  /** The task of a parent's spawn call, if that call ran before (a resumed or re-run call). */
  async byCall(parentTurnId: string, callId: string): Promise<TaskRow | undefined> {
    return this.sql.first<TaskRow>(sql`
      SELECT ${TASK_COLUMNS} FROM tasks k WHERE k.parent_turn_id = ${parentTurnId}::uuid AND k.call_id = ${callId}`);
  }

  /** A task of this tenant, or of this parent session when given (a tool sees only its session's children). */
  async get(tenantId: string, id: string, parentSessionId?: string): Promise<TaskRow | undefined> {
    return this.sql.first<TaskRow>(sql`
      SELECT ${TASK_COLUMNS} FROM tasks k WHERE k.id = ${id}::uuid AND ${ofTenant('k.tenant_id', tenantId)}
        ${parentSessionId ? sql`AND k.parent_session_id = ${parentSessionId}::uuid` : sql``}`);
  }

  /** The children a parent session spawned, newest first. */
  async list(tenantId: string, parentSessionId: string, limit = 50): Promise<TaskRow[]> {
    return this.sql.rows<TaskRow>(sql`
      SELECT ${TASK_COLUMNS} FROM tasks k
      WHERE k.tenant_id = ${tenantId}::uuid AND k.parent_session_id = ${parentSessionId}::uuid
      ORDER BY k.created_at DESC, k.id LIMIT ${limit}::int`);
  }

  /** The children a turn spawned, oldest first (GET /v1/turns/:id). */
  async ofTurn(tenantId: string, parentTurnId: string): Promise<TaskRow[]> {
    return this.sql.rows<TaskRow>(sql`
      SELECT ${TASK_COLUMNS} FROM tasks k
      WHERE k.tenant_id = ${tenantId}::uuid AND k.parent_turn_id = ${parentTurnId}::uuid
      ORDER BY k.created_at, k.id`);
  }

  /**
   * The spawn depth of the task a turn runs (0 for a turn that runs none: a root turn), and the turn's
   * budget: its cap (its agent's maxUsd, lowered by the share its own parent gave it) and what it and
   * its descendants spent as of their last checkpoints (docs/adr/0025).
   */
  async parentContext(
    tenantId: string,
    turnId: string,
  ): Promise<
    | {
        depth: number;
        taskId: string | null;
        agent: { tier: string; allowedSubagents: string[]; name: string };
        budget: ParentBudget;
      }
    | undefined
  > {
    const row = await this.sql.first<{
      depth: number;
      taskId: string | null;
      agent: { tier: string; allowedSubagents: string[]; name: string };
      budgets: unknown;
      shareUsd: string | null;
      spentUsd: string;
    }>(sql`
      SELECT coalesce(k.depth, 0)::int AS depth, t.task_id AS "taskId",
        json_build_object('tier', a.tier, 'allowedSubagents', a.allowed_subagents, 'name', a.name) AS agent,
        a.budgets, m.metadata #>> '{subagent,maxUsd}' AS "shareUsd",
        (t.cost_usd + ${descendantsCostUsd(sql`t.id`)})::text AS "spentUsd"
      FROM turns t JOIN agents a ON a.id = t.agent_id LEFT JOIN tasks k ON k.id = t.task_id
        LEFT JOIN messages m ON m.id = t.input_message_id
      WHERE t.id = ${turnId}::uuid AND ${ofTenant('t.tenant_id', tenantId)}`);
    if (!row) return undefined;
    const own = agentMaxUsd(row.budgets);
    const share = row.shareUsd === null ? undefined : Number(row.shareUsd);
    const caps = [own, share].filter((v): v is number => v !== undefined && Number.isFinite(v));
    return {
      depth: row.depth,
      taskId: row.taskId,
      agent: row.agent,
      budget: { maxUsd: caps.length ? Math.min(...caps) : null, spentUsd: Number(row.spentUsd) },
    };
  }

  /**
   * One transaction: the task row (unique by the parent's turn and call: a re-run finds it), the
   * child's session (an idle child session of the same agent under the same parent session is reused
   * with its history), the child's message and queued turn through admission's own statement, and
   * `subagent_spawned` on the parent's session journal. The child's job is published after the commit;
   * a lost one is found by the reconciler (the child turn is `queued`).
   */
  async spawn(a: SpawnInput): Promise<SpawnOutcome> {
    // The task's prompt and context sealed for the tenant (docs/adr/0067); as given without a cipher.
    const input = {
      task: await sealText(a.tenantId, a.task),
      ...(a.context ? { context: await sealText(a.tenantId, a.context) } : {}),
    };
    const result = await this.sql.transaction(async (tx) => {
      const taskId = newId();
      const inserted = await tx.first<{ id: string }>(sql`
        INSERT INTO tasks (id, tenant_id, agent_id, agent_name, parent_turn_id, parent_task_id, parent_session_id,
          call_id, kind, status, depth, blocking, input, updated_at)
        VALUES (${taskId}::uuid, ${a.tenantId}::uuid, ${a.agent.id}::uuid, ${a.agent.name}, ${a.parentTurnId}::uuid,
          ${a.parentTaskId}::uuid, ${a.parentSessionId}::uuid, ${a.callId}, 'subagent', 'pending', ${a.depth}::int,
          ${a.blocking}, ${json(input)}::jsonb, now())
        ON CONFLICT (parent_turn_id, call_id) DO NOTHING RETURNING id`);
      if (!inserted) return undefined;
      // Reuse (seed 000 "Running a reusable sub-agent"): the same agent under the same parent session,
      // active and idle (no turn queued, running or waiting), keeps its history.
      const reused = await tx.first<{ id: string }>(sql`
        SELECT s.id FROM sessions s
        WHERE s.parent_session_id = ${a.parentSessionId}::uuid AND s.agent_id = ${a.agent.id}::uuid
          AND s.tenant_id = ${a.tenantId}::uuid AND s.status = 'active'
          AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id
            AND t.status IN ${HOLDS_SESSION})
        ORDER BY s.created_at LIMIT 1 FOR UPDATE SKIP LOCKED`);
      const sessionId = reused?.id ?? newId();
      if (!reused) {
        await tx.execute(sql`
          INSERT INTO sessions (id, tenant_id, agent_id, parent_session_id, title, metadata, updated_at)
          VALUES (${sessionId}::uuid, ${a.tenantId}::uuid, ${a.agent.id}::uuid, ${a.parentSessionId}::uuid,
            ${`sub-agent ${a.agent.name}`}, ${json({ subagent: { parentSessionId: a.parentSessionId } })}::jsonb, now())`);
      }
      const body: MessageBody = {
        type: 'text',
        text: a.context ? `${a.task}\n\nContext from the parent agent:\n${a.context}` : a.task,
      };
      const messageId = newId();
      const turnId = newId();
      const admitted = await admitWithin(tx, {
        tenantId: a.tenantId,
        sessionId,
        messageId,
        turnId,
        eventId: newId(),
        kind: 'internal_followup',
        origin: { kind: 'system', subsystem: 'subagent' },
        trust: 'trusted_system',
        authorityClass: 'runtime_instruction',
        priority: 'normal',
        deliverySurface: 'runtime_system',
        admissionContext: 'runtime_owned',
        body,
        metadata: {
          subagent: {
            taskId,
            parentTurnId: a.parentTurnId,
            depth: a.depth,
            ...(a.maxUsd !== undefined ? { maxUsd: a.maxUsd } : {}),
          },
        },
        correlationId: a.parentTurnId,
        causationId: a.parentTurnId,
        traceContext: {},
        rejectIfBusy: false,
      });
      // A paused tenant (docs/adr/0030) spawns nothing: the spawn's transaction rolls back whole.
      if (admitted.kind === 'paused') throw new TenantPausedError();
      // A stopped child agent (docs/adr/0031) is not crossed either.
      if (admitted.kind === 'stopped') throw new AgentStoppedError(admitted.agentId);
      if (admitted.kind !== 'admitted') throw new Error(`child admission refused: ${admitted.kind}`);
      await tx.execute(sql`
        UPDATE turns SET parent_turn_id = ${a.parentTurnId}::uuid, task_id = ${taskId}::uuid
        WHERE id = ${turnId}::uuid`);
      await tx.execute(sql`
        UPDATE messages SET task_id = ${taskId}::uuid WHERE id = ${messageId}::uuid`);
      await tx.execute(sql`
        UPDATE tasks SET session_id = ${sessionId}::uuid, child_turn_id = ${turnId}::uuid WHERE id = ${taskId}::uuid`);
      const data = {
        taskId,
        agent: a.agent.name,
        childSessionId: sessionId,
        childTurnId: turnId,
        depth: a.depth,
        blocking: a.blocking,
        callId: a.callId,
        reused: !!reused,
      };
      const events = await journal(tx, {
        tenantId: a.tenantId,
        sessionId: a.parentSessionId,
        turnId: a.parentTurnId,
        type: EventType.SubagentSpawned,
        data,
      });
      return { taskId, sessionId, turnId, events };
    });
    if (!result) {
      // The same call spawned before (a concurrent or earlier run): that child is the one.
      const task = await this.byCall(a.parentTurnId, a.callId);
      if (!task) throw new Error('task conflict without a task');
      return { task, created: false };
    }
    await this.o.live?.publish(a.parentSessionId, result.events);
    await this.enqueue({ turnId: result.turnId, sessionId: result.sessionId, tenantId: a.tenantId });
    const task = await this.get(a.tenantId, result.taskId);
    return { task: task!, created: true };
  }

  /** The tools a turn of this agent is offered (`offeredTools`). */
  offered(agent: { tier?: string; tools: string[] }, child = false): string[] {
    return offeredTools(agent, child);
  }

  /** The task a child turn runs, if any. */
  async ofChildTurn(childTurnId: string): Promise<TaskRow | undefined> {
    return this.sql.first<TaskRow>(sql`
      SELECT ${TASK_COLUMNS} FROM tasks k WHERE k.child_turn_id = ${childTurnId}::uuid`);
  }

  /**
   * ask_user: the child hands back `awaiting_user {question, options}` (the task stays open), the parent
   * hears of it (`subagent_completed` with that status) and a parent waiting for it resumes with it; the
   * child's own turn then waits until `answer`.
   */
  async ask(task: TaskRow, callId: string, question: string, options: string[] | undefined): Promise<void> {
    const handback = { status: 'awaiting_user', question, ...(options ? { options } : {}), callId };
    // As stored: the question and its options sealed for the tenant (status and callId stay plain: SQL reads them).
    const stored = {
      ...handback,
      question: await sealText(task.tenantId, question),
      ...(options ? { options: await sealJson(task.tenantId, options) } : {}),
    };
    const resumeId = newId();
    let events: CommittedEvent[] = [];
    const resume = await this.sql.transaction(async (tx) => {
      events = [];
      if (!task.parentSessionId) return undefined;
      await tx.execute(sql`SELECT 1 FROM sessions WHERE id = ${task.parentSessionId}::uuid FOR UPDATE`);
      const asked = await tx.execute(sql`
        UPDATE tasks SET handback = ${json(stored)}::jsonb, updated_at = now()
        WHERE id = ${task.id}::uuid AND status IN ${OPEN} AND ${NOT_ASKING(sql`tasks`)}`);
      if (asked === 0) return undefined;
      const data = { taskId: task.id, agent: task.agentName, status: 'awaiting_user', ok: false, handback };
      events = await journal(tx, {
        id: resumeId,
        tenantId: task.tenantId,
        sessionId: task.parentSessionId,
        turnId: task.parentTurnId,
        type: EventType.SubagentCompleted,
        data,
      });
      return resumeWithin(tx, task.parentSessionId, resumeId);
    });
    if (task.parentSessionId) await this.o.live?.publish(task.parentSessionId, events);
    if (resume) await this.enqueue(resume.job, resume.traceContext);
  }

  /**
   * POST /v1/tasks/:id/answer: the answer to the child's question is stored on the task (by the asking
   * call's id, so the re-run ask_user returns it), the handback cleared (the child's end reports again),
   * and the child's turn resumed. `conflict` when the child is not waiting for an answer.
   */
  async answer(
    tenantId: string,
    taskId: string,
    answer: string,
  ): Promise<{ kind: 'not_found' } | { kind: 'conflict' } | { kind: 'answered'; task: TaskRow }> {
    const resumeId = newId();
    const stored = await sealText(tenantId, answer);
    const result = await this.sql.transaction(async (tx) => {
      const head = await tx.first<{ session_id: string | null }>(sql`
        SELECT session_id FROM tasks WHERE id = ${taskId}::uuid AND ${ofTenant('tenant_id', tenantId)}`);
      if (!head) return { kind: 'not_found' as const };
      if (!head.session_id) return { kind: 'conflict' as const };
      // The child session row first: the child turn's status changes under it (ADR 0013's order).
      await tx.execute(sql`SELECT 1 FROM sessions WHERE id = ${head.session_id}::uuid FOR UPDATE`);
      const row = await tx.first<{ call_id: string }>(sql`
        SELECT handback ->> 'callId' AS call_id FROM tasks
        WHERE id = ${taskId}::uuid AND status IN ${OPEN} AND handback ->> 'status' = 'awaiting_user' FOR UPDATE`);
      if (!row) return { kind: 'conflict' as const };
      await tx.execute(sql`
        UPDATE tasks SET handback = NULL, parent_notified_at = NULL, updated_at = now(),
          input = input || jsonb_build_object('answers',
            coalesce(input -> 'answers', '{}'::jsonb) || jsonb_build_object(${row.call_id}::text, ${stored}::text))
        WHERE id = ${taskId}::uuid`);
      return { kind: 'answered' as const, resume: await resumeWithin(tx, head.session_id, resumeId) };
    });
    if (result.kind !== 'answered') return result;
    if (result.resume) await this.enqueue(result.resume.job, result.resume.traceContext);
    return { kind: 'answered', task: (await this.get(tenantId, taskId))! };
  }

  /** A parent now waits for this task (wait_subagent): its end resumes the parent's waiting turn. */
  async markBlocking(taskId: string): Promise<void> {
    await this.sql.execute(
      sql`UPDATE tasks SET blocking = true, updated_at = now() WHERE id = ${taskId}::uuid`,
    );
  }

  /**
   * A child turn ended (its task row ended in the same statement): `subagent_completed` on the parent's
   * session journal once (parent_notified_at), and the parent's waiting turn resumed when nothing it
   * waits for is still open. A child turn that ended outside the runner (cancelled while queued, failed
   * after every retry) has its task ended here from the turn row.
   */
  async childEnded(childTurnId: string): Promise<void> {
    const task = await this.sql.first<{ id: string }>(sql`
      SELECT id FROM tasks WHERE child_turn_id = ${childTurnId}::uuid`);
    if (task) await this.reportToParent(task.id);
  }

  /**
   * Ends (from its turn) and reports one task to its parent (its handback delivered); idempotent. A
   * parent turn waiting for it resumes with it; an async task whose spawning turn has ended rejoins
   * the parent's session as a `task_result` message (docs/adr/0057), in the same transaction.
   */
  async reportToParent(taskId: string): Promise<void> {
    let events: CommittedEvent[] = [];
    let parentSessionId: string | null = null;
    const out = await this.sql.transaction(async (tx) => {
      events = [];
      const head = await tx.first<{ parent_session_id: string | null }>(sql`
        SELECT parent_session_id FROM tasks WHERE id = ${taskId}::uuid`);
      if (!head?.parent_session_id) return undefined;
      parentSessionId = head.parent_session_id;
      // The parent session row first: the order every status change of a turn follows (ADR 0013).
      await tx.execute(sql`SELECT 1 FROM sessions WHERE id = ${head.parent_session_id}::uuid FOR UPDATE`);
      // Ended outside the runner: the task follows its turn.
      await tx.execute(sql`
        UPDATE tasks k SET status = t.status, completed_at = coalesce(t.completed_at, now()), updated_at = now(),
          output = ${cut4000(sql`t.final_text`)}, cost_usd = t.cost_usd,
          handback = CASE WHEN t.status = 'completed' AND t.stop_reason = 'final_answer'
            THEN jsonb_build_object('status', 'completed', 'result', ${cut4000(sql`t.final_text`)})
            ELSE jsonb_build_object('status', 'incomplete', 'reason', coalesce(t.stop_reason, t.status)) END
        FROM turns t
        WHERE k.id = ${taskId}::uuid AND t.id = k.child_turn_id AND k.status IN ${OPEN}
          AND t.status IN ${ENDED}`);
      const row = await tx.first<TaskRow>(sql`
        UPDATE tasks k SET parent_notified_at = now()
        WHERE k.id = ${taskId}::uuid AND k.parent_notified_at IS NULL AND k.status NOT IN ${OPEN}
        RETURNING ${TASK_COLUMNS}`);
      if (row) {
        const data = {
          taskId: row.id,
          agent: row.agentName,
          status: row.status,
          ok: row.status === 'completed',
          handback: row.handback,
          costUsd: row.costUsd,
          callId: row.callId,
        };
        events = await journal(tx, {
          tenantId: row.tenantId,
          sessionId: head.parent_session_id,
          turnId: row.parentTurnId,
          type: EventType.SubagentCompleted,
          data,
        });
        // A parent turn waits for it: the waiting call, run again on resume, is how it rejoins.
        if (row.blocking && !row.closedAt) {
          await tx.execute(sql`
            UPDATE tasks SET rejoin = 'waiting_turn', rejoined_at = now()
            WHERE id = ${taskId}::uuid AND rejoin IS NULL`);
        }
      }
      const rejoined = await rejoinWithin(tx, taskId);
      if (rejoined) events.push(rejoined.event);
      return { resume: await resumeWithin(tx, head.parent_session_id), rejoined };
    });
    if (parentSessionId) await this.o.live?.publish(parentSessionId, events);
    if (out?.resume) await this.enqueue(out.resume.job, out.resume.traceContext);
    if (out?.rejoined) await this.enqueue(out.rejoined.job);
  }

  /**
   * The session's ended async tasks whose results have not rejoined it yet, rejoined now as
   * `task_result` messages (docs/adr/0057): after a parent turn ended that could have taken them
   * itself (a finalisation step, run only when its end did not record the plain closure), and from
   * the tasks sweep. Under the session's row lock, so it and a child's report never both admit.
   */
  async rejoinSession(sessionId: string): Promise<number> {
    const rejoined = await this.sql.transaction(async (tx) => {
      await tx.execute(sql`SELECT 1 FROM sessions WHERE id = ${sessionId}::uuid FOR UPDATE`);
      const due = await tx.rows<{ id: string }>(sql`
        SELECT k.id FROM tasks k
        WHERE k.parent_session_id = ${sessionId}::uuid AND ${rejoinPending(sql`k`)} AND k.status NOT IN ${OPEN}
          AND k.parent_notified_at IS NOT NULL
        ORDER BY k.completed_at, k.id`);
      const done: Rejoined[] = [];
      for (const d of due) {
        const r = await rejoinWithin(tx, d.id);
        if (r) done.push(r);
      }
      return done;
    });
    if (rejoined.length === 0) return 0;
    await this.o.live?.publish(
      sessionId,
      rejoined.map((r) => r.event),
    );
    for (const r of rejoined) await this.enqueue(r.job);
    return rejoined.length;
  }

  /**
   * A parent's call answered with these tasks' handbacks (wait_subagent on an ended task,
   * list_subagents): their results rejoined through the tool; no `task_result` follows (docs/adr/0057).
   */
  async markSeen(taskIds: string[]): Promise<void> {
    if (taskIds.length === 0) return;
    await this.sql.execute(sql`
      UPDATE tasks SET rejoin = 'tool_call', rejoined_at = now(), updated_at = now()
      WHERE id = ANY(${taskIds}::uuid[]) AND rejoin IS NULL AND status NOT IN ${OPEN}`);
  }

  /**
   * POST /v1/tasks/:id/cancel (docs/adr/0057): an operator stops a task. The stop is audited
   * (`task.cancelled`, the actor and the cause) in the transaction that accepts it; then its child
   * turn is cancelled through ADR 0014's path with `cause` (a queued or waiting child ends at once, a
   * running one at its next safe point), and the parent hears of the end as of any other (a waiting
   * parent resumes; otherwise the result rejoins as a `task_result`). `conflict` when it already ended.
   */
  async stop(
    tenantId: string,
    taskId: string,
    cause: CancelCause,
    actor: string,
  ): Promise<
    | { kind: 'not_found' }
    | { kind: 'conflict' }
    | {
        kind: 'stopped';
        task: TaskRow;
        /** The child was running: its worker stops it (the task may read ended already if it did). */
        running: boolean;
      }
  > {
    const head = await this.sql.transaction(async (tx) => {
      const k = await tx.first<{ status: string; child_turn_id: string | null }>(sql`
        SELECT status, child_turn_id FROM tasks
        WHERE id = ${taskId}::uuid AND ${ofTenant('tenant_id', tenantId)} FOR UPDATE`);
      if (!k) return { kind: 'not_found' as const };
      if (isEnded(k.status) || !k.child_turn_id) return { kind: 'conflict' as const };
      await tx.execute(
        auditInsert({
          tenantId,
          actor,
          action: 'task.cancelled',
          targetType: 'task',
          targetId: taskId,
          details: { reason: cause.reason, note: cause.note ?? null, childTurnId: k.child_turn_id },
        }),
      );
      return { kind: 'ok' as const, childTurnId: k.child_turn_id };
    });
    if (head.kind !== 'ok') return head;
    if (!this.o.cancelTurn) throw new Error('the task service has no cancel path');
    const cancelled = await this.o.cancelTurn(tenantId, head.childTurnId, cause);
    // A queued or waiting child ended at once (its task with it): its parent hears of it now.
    await this.reportToParent(taskId);
    return {
      kind: 'stopped',
      task: (await this.get(tenantId, taskId))!,
      running: cancelled?.status === 'running',
    };
  }

  /** A parent waiting on its children: resumed now when they all ended before its wait committed. */
  async parentWaiting(turnId: string): Promise<void> {
    const resume = await this.sql.transaction(async (tx) => {
      const t = await tx.first<{ session_id: string }>(
        sql`SELECT session_id FROM turns WHERE id = ${turnId}::uuid`,
      );
      if (!t) return undefined;
      await tx.execute(sql`SELECT 1 FROM sessions WHERE id = ${t.session_id}::uuid FOR UPDATE`);
      return resumeWithin(tx, t.session_id);
    });
    if (resume) await this.enqueue(resume.job, resume.traceContext);
  }

  /**
   * Ended tasks whose parent has not heard of them (a worker died between the child's end and the
   * report, or the child turn ended outside the runner), and open tasks whose child turn ended: each
   * reported to its parent; then parents still waiting on a child with nothing left to wait for: resumed. The maintenance queue's
   * reconcile job runs it.
   */
  async reportDue(limit = 100): Promise<number> {
    const due = await this.sql.rows<{ id: string }>(sql`
      SELECT k.id FROM tasks k LEFT JOIN turns t ON t.id = k.child_turn_id
      WHERE k.kind = 'subagent' AND k.parent_notified_at IS NULL AND k.parent_session_id IS NOT NULL
        AND (k.status NOT IN ${OPEN} OR t.status IN ${ENDED})
      ORDER BY k.created_at LIMIT ${limit}::int`);
    for (const d of due) await this.reportToParent(d.id);
    // A parent whose worker died between its wait's commit and its own check, after its children had ended
    // and reported: nothing else would resume it.
    const stuck = await this.sql.rows<{ id: string }>(sql`
      SELECT t.id FROM turns t
      WHERE t.status = 'awaiting_subagent'
        AND NOT EXISTS (SELECT 1 FROM tasks k WHERE k.parent_session_id = t.session_id AND k.blocking
          AND k.closed_at IS NULL AND k.status IN ${OPEN} AND ${NOT_ASKING(sql`k`)})
        AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.child_turn_id = t.id AND NOT ${NOT_ASKING(sql`o`)})
      ORDER BY t.created_at LIMIT ${limit}::int`);
    for (const t of stuck) await this.parentWaiting(t.id);
    // Ended async tasks told to their parent whose spawning turn has ended, not yet rejoined (a worker
    // died between that turn's end and its rejoin step, or the parent's tenant was paused): now.
    const sessions = await this.sql.rows<{ id: string }>(sql`
      SELECT DISTINCT k.parent_session_id AS id FROM tasks k LEFT JOIN turns pt ON pt.id = k.parent_turn_id
      WHERE ${rejoinPending(sql`k`)} AND k.parent_session_id IS NOT NULL AND k.status NOT IN ${OPEN}
        AND k.parent_notified_at IS NOT NULL AND (pt.id IS NULL OR pt.status IN ${ENDED})
      LIMIT ${limit}::int`);
    let rejoined = 0;
    for (const s of sessions) rejoined += await this.rejoinSession(s.id);
    return due.length + stuck.length + rejoined;
  }

  /**
   * A parent turn that ended at its deadline or budget (docs/adr/0055): its sub-agents' child turns
   * still open are cancelled with that reason. Returns how many; 0 without the cancel path.
   */
  async stopChildren(tenantId: string, turnId: string, cause: CancelCause): Promise<number> {
    return this.o.control ? this.o.control.cancelChildren(tenantId, turnId, cause) : 0;
  }

  /** close_subagent: the task is closed; a child still running is cancelled (ADR 0014's cancel path). */
  async close(task: TaskRow): Promise<void> {
    await this.sql.execute(sql`
      UPDATE tasks SET closed_at = coalesce(closed_at, now()), blocking = false, updated_at = now()
      WHERE id = ${task.id}::uuid`);
    if (!isEnded(task.status) && task.childTurnId && this.o.cancelTurn) {
      // The parent agent asked, as a client would (docs/adr/0055).
      await this.o.cancelTurn(
        task.tenantId,
        task.childTurnId,
        cancelCause('api_cancel', 'closed by the parent agent (close_subagent)'),
      );
      // A queued child ends at once (its task with it); the parent hears of it here.
      await this.reportToParent(task.id);
    }
  }

  private async enqueue(
    job: { turnId: string; sessionId: string; tenantId: string; resume?: string },
    traceContext?: unknown,
  ): Promise<void> {
    try {
      const enqueued = withSpan('enqueue sub-agent turn', { parent: traceContext as TraceCarrier }, () =>
        publish(this.o.turnsQueue, Jobs.turn, job),
      );
      enqueued.catch(() => undefined);
      await withTimeout(enqueued, this.o.enqueueTimeoutMs ?? 2000);
    } catch (err) {
      this.o.logger.error({ err, turnId: job.turnId }, 'enqueue failed; the reconciler will retry');
    }
  }
}

/**
 * The child's final text cut to 4000 characters for the task's output and handback; a sealed one
 * (docs/adr/0067, an encrypting tenant's) is copied whole, since a cut one would no longer open.
 */
const cut4000 = (text: Sql) =>
  contentCipher()
    ? sql`CASE WHEN ${text} LIKE 'sbe1.%' THEN ${text} ELSE left(coalesce(${text}, ''), 4000) END`
    : sql`left(coalesce(${text}, ''), 4000)`;

/**
 * One event on a session's journal (its seq allocated under the session row), as committed: its
 * content fields (a handback, a question) sealed for an encrypting tenant (docs/adr/0067).
 */
async function journal(
  tx: SqlRunner,
  e: { tenantId: string; sessionId: string; turnId: string | null; type: string; data: unknown; id?: string },
): Promise<CommittedEvent[]> {
  const data = await sealEventData(e.tenantId, e.data);
  return tx.rows<CommittedEvent>(sql`
    WITH s AS (
      UPDATE sessions SET last_event_seq = last_event_seq + 1 WHERE id = ${e.sessionId}::uuid
      RETURNING last_event_seq AS seq
    )
    INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
    SELECT ${e.id ?? newId()}::uuid, ${e.tenantId}::uuid, ${e.sessionId}::uuid, ${e.turnId}::uuid, s.seq,
      ${e.type}, ${json(data)}::jsonb
    FROM s
    RETURNING id, seq, type, turn_id AS "turnId", data, created_at AS "createdAt"`);
}

/**
 * Inside a transaction holding the parent session's row lock: the session's turn waiting on
 * a child goes back to `queued` (its run state kept, so it resumes first) when no blocking task of
 * the session is still open. The resume job's id names the last task that ended (`<turnId>.<taskId>`),
 * the same from whichever side gets here first.
 */
async function resumeWithin(
  tx: SqlRunner,
  sessionId: string,
  /** The resume job's wait id when it is not a task's end (an ask, an answer): unique per resume. */
  resumeId?: string,
): Promise<
  | {
      job: { turnId: string; sessionId: string; tenantId: string; resume: string };
      priority: string;
      traceContext: unknown;
    }
  | undefined
> {
  const row = await tx.first<{
    id: string;
    tenant_id: string;
    priority: string;
    trace_context: unknown;
    last: string | null;
  }>(sql`
    WITH w AS (
      SELECT id FROM turns WHERE session_id = ${sessionId}::uuid AND status = 'awaiting_subagent' LIMIT 1
    ),
    u AS (
      UPDATE turns t SET status = 'queued' FROM w
      WHERE t.id = w.id AND t.status = 'awaiting_subagent' AND NOT EXISTS (
        -- A child that asked its user (awaiting_user) has handed back: its parent goes on.
        SELECT 1 FROM tasks k WHERE k.parent_session_id = ${sessionId}::uuid AND k.blocking AND k.closed_at IS NULL
          AND k.status IN ${OPEN} AND ${NOT_ASKING(sql`k`)})
        -- A child turn that asked its user waits for the answer (POST /v1/tasks/:id/answer).
        AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.child_turn_id = t.id AND NOT ${NOT_ASKING(sql`o`)})
      RETURNING t.id, t.tenant_id, t.priority, t.trace_context
    )
    SELECT u.*, (SELECT k.id FROM tasks k WHERE k.parent_session_id = ${sessionId}::uuid AND k.blocking
        ORDER BY k.completed_at DESC NULLS LAST, k.id LIMIT 1) AS last
    FROM u`);
  if (!row) return undefined;
  return {
    job: { turnId: row.id, sessionId, tenantId: row.tenant_id, resume: resumeId ?? row.last ?? row.id },
    priority: row.priority,
    traceContext: row.trace_context,
  };
}

/** A `task_result` admitted in a transaction: its turn's job and its journal event, for after the commit. */
interface Rejoined {
  job: { turnId: string; sessionId: string; tenantId: string };
  event: CommittedEvent;
}

/**
 * Inside a transaction holding the parent session's row lock: an ended async task (told to its
 * parent, not closed, not waited for, not yet rejoined) rejoins its parent's session as ONE
 * `task_result` message (seed 002: origin task, runtime instruction, delivery surface task_rejoin),
 * admitted like any message so it queues behind a running turn and starts a parent turn in order
 * (docs/adr/0057). Exactly once: the task row records the rejoin in the same transaction, and the
 * admission's idempotency key `task_result:<taskId>` refuses a second. Deferred while the spawning
 * turn is unfinished (it may take the result itself); skipped when that turn was cancelled or the
 * child was stopped from the parent's side. A paused tenant or stopped agent admits nothing: the
 * task stays due and the sweep retries after the resume.
 */
async function rejoinWithin(tx: SqlRunner, taskId: string): Promise<Rejoined | undefined> {
  const k = await tx.first<TaskRow & { parentStatus: string | null; cascaded: boolean }>(sql`
    SELECT ${TASK_COLUMNS}, pt.status AS "parentStatus",
      coalesce(ct.cancel_reason IN ${CASCADED_CANCELS}, false) AS cascaded
    FROM tasks k LEFT JOIN turns pt ON pt.id = k.parent_turn_id LEFT JOIN turns ct ON ct.id = k.child_turn_id
    WHERE k.id = ${taskId}::uuid AND ${rejoinPending(sql`k`)} AND k.status NOT IN ${OPEN}
      AND k.parent_notified_at IS NOT NULL AND k.parent_session_id IS NOT NULL
    FOR UPDATE OF k`);
  if (!k) return undefined;
  // The spawning turn still runs or waits: it may take the result itself; its end re-drives this.
  if (k.parentStatus && !isEnded(k.parentStatus)) return undefined;
  const mark = (rejoin: Rejoin, ids?: { messageId: string; turnId: string }) =>
    tx.execute(sql`
      UPDATE tasks SET rejoin = ${rejoin}, rejoined_at = now(), updated_at = now(),
        rejoin_message_id = ${ids?.messageId ?? null}::uuid, rejoin_turn_id = ${ids?.turnId ?? null}::uuid
      WHERE id = ${k.id}::uuid AND rejoin IS NULL`);
  if (k.parentStatus === 'cancelled' || k.cascaded) {
    await mark('skipped');
    return undefined;
  }
  const messageId = newId();
  const turnId = newId();
  const eventId = newId();
  const answer = { task_id: k.id, agent: k.agentName, status: k.status, handback: k.handback };
  const admitted = await admitWithin(tx, {
    tenantId: k.tenantId,
    sessionId: k.parentSessionId!,
    messageId,
    turnId,
    eventId,
    kind: 'task_result',
    origin: { kind: 'task', taskId: k.id },
    trust: 'trusted_system',
    authorityClass: deriveAuthorityClass('task_result'),
    priority: 'normal',
    deliverySurface: 'task_rejoin',
    admissionContext: 'runtime_owned',
    body: {
      type: 'brief',
      title: `Result of sub-agent task ${k.id} (${k.agentName}): ${k.status}`,
      text: JSON.stringify(answer),
    },
    metadata: {
      subagent: { taskId: k.id, rejoin: true, parentTurnId: k.parentTurnId, childTurnId: k.childTurnId },
    },
    // Seed 002 source references (docs/adr/0060), shown on the message as `sourceRefs`.
    sourceRefs: { taskId: k.id, ...(k.childTurnId ? { childTurnId: k.childTurnId } : {}) },
    correlationId: k.parentTurnId,
    causationId: k.childTurnId,
    idempotency: { key: `task_result:${k.id}`, fingerprint: k.id },
    traceContext: {},
    rejectIfBusy: false,
  });
  if (admitted.kind === 'prior') {
    await mark('task_result', { messageId: admitted.prior.messageId, turnId: admitted.prior.turnId });
    return undefined;
  }
  if (admitted.kind === 'paused' || admitted.kind === 'stopped' || admitted.kind === 'in_flight') {
    await tx.execute(sql`UPDATE tasks SET updated_at = now() WHERE id = ${k.id}::uuid`);
    return undefined;
  }
  // The parent's session was closed (or is gone): nothing to rejoin.
  if (admitted.kind !== 'admitted') {
    await mark('skipped');
    return undefined;
  }
  await tx.execute(sql`UPDATE messages SET task_id = ${k.id}::uuid WHERE id = ${messageId}::uuid`);
  await mark('task_result', { messageId, turnId });
  return {
    job: { turnId, sessionId: k.parentSessionId!, tenantId: k.tenantId },
    event: {
      id: eventId,
      seq: admitted.eventSeq,
      type: EventType.MessageAdmitted,
      turnId,
      data: admitted.event.data,
      createdAt: admitted.event.createdAt,
    },
  };
}
