import { z } from 'zod';

/**
 * Queue names. Renaming one strands every job already in Redis under the old
 * name: add a new queue and drain the old one instead.
 */
export const QueueName = {
  Triage: 'triage',
  Turns: 'turns',
  PostTurn: 'post-turn',
  OutboundWebhooks: 'outbound-webhooks',
  Maintenance: 'maintenance',
  Schedules: 'schedules',
  Work: 'work',
  /** Embeds an agent's memory records for its embedder (docs/adr/0050). */
  MemoryEmbed: 'memory-embed',
  /** Deletes a tenant in bounded batches (docs/adr/0068), in the hooks worker. */
  TenantDeletion: 'tenant-deletion',
} as const;
export type QueueName = (typeof QueueName)[keyof typeof QueueName];

/** W3C trace context carried in every job so one trace spans every hop. */
export const TraceCarrier = z.object({
  traceparent: z.string().optional(),
  tracestate: z.string().optional(),
});
export type TraceCarrier = z.infer<typeof TraceCarrier>;

/**
 * A wake-up for one turn. Postgres holds the turn itself; the job only says
 * "this session has work". Job id = turn id, so a re-enqueue is harmless.
 */
export const TurnJob = z.object({
  turnId: z.uuid(),
  sessionId: z.uuid(),
  tenantId: z.uuid(),
  /**
   * A resume of a waiting turn (docs/adr/0013): the wait that ended (an approval id). Its job id is
   * `${turnId}.${resume}`, so it never collides with the turn's first job, kept completed for a day.
   */
  resume: z.uuid().optional(),
  trace: TraceCarrier,
});
export type TurnJob = z.infer<typeof TurnJob>;

export const TriageJob = z.object({
  deliveryId: z.uuid(),
  tenantId: z.uuid(),
  trace: TraceCarrier,
});
export type TriageJob = z.infer<typeof TriageJob>;

/**
 * `completion-webhook`: the signed `turn.*` notification to the tenant's notify endpoint (docs/adr/0018).
 * `learning`: the turn's tool calls added to the agent's per-tool statistics.
 * `archivist`: durable facts distilled by a model into the agent's memory (also for cancelled turns).
 * `episodic-index`: the turn as one searchable memory record (docs/adr/0022).
 * `scoring`: the agent's scorers of the turn's version score its final answer (docs/adr/0062).
 */
export const PostTurnHookName = z.enum([
  'cost-log',
  'completion-webhook',
  'learning',
  'archivist',
  'episodic-index',
  'scoring',
]);
export type PostTurnHookName = z.infer<typeof PostTurnHookName>;

/** The most ended turns one `post-turn` job carries (docs/adr/0070): the first plus `more`. */
export const POST_TURN_BATCH_MAX = 64;

/**
 * Without `hook`: the one job an ended turn gets (docs/adr/0039), running every hook, job id
 * `${turnId}.hooks`; a hook that fails in it is retried on its own, in a job of its own. With
 * `hook`: that hook alone (its retries, the hooks reconcile), job id `${turnId}.${hook}` (BullMQ ids
 * cannot contain ":"). With `sessionId` (archivist only, docs/adr/0032): the session's debounced
 * distillation, triggered by `turnId`, distilling every turn of the session the archivist deferred;
 * job id `${turnId}.${hook}.session`, deduplicated per session by BullMQ (`archivistSessionDedup`).
 * With `more` (no `hook`; docs/adr/0070): the post-turn work of more ended turns besides `turnId`,
 * published by one harness process as one job (group commit); the hooks worker runs them all in one
 * transaction. Job id `${turnId}.hooks`, as for the first turn alone.
 */
export const PostTurnJob = z.object({
  turnId: z.uuid(),
  tenantId: z.uuid(),
  hook: PostTurnHookName.optional(),
  sessionId: z.uuid().optional(),
  more: z
    .array(z.object({ turnId: z.uuid(), tenantId: z.uuid(), trace: TraceCarrier.optional() }))
    .max(POST_TURN_BATCH_MAX)
    .optional(),
  trace: TraceCarrier,
});
export type PostTurnJob = z.infer<typeof PostTurnJob>;

/**
 * `memory-embed` (docs/adr/0050): embed the agent's records lacking a vector of its embedder, in
 * batches, and switch recall to the new set when it is complete. Idempotent and resumable: what is
 * left is read from Postgres each run. Deduplicated per agent (`memoryEmbedDedup`).
 */
export const MemoryEmbedJob = z.object({
  tenantId: z.uuid(),
  agentId: z.uuid(),
  /** A fresh id per publish (the job id's tail): deduplication, not the id, collapses publishes. */
  run: z.uuid(),
  trace: TraceCarrier.optional(),
});
export type MemoryEmbedJob = z.infer<typeof MemoryEmbedJob>;

/** One pending embedding job per agent: a newer publish while one runs starts after it. */
export function memoryEmbedDedup(agentId: string): { id: string; keepLastIfActive: true } {
  return { id: `memory-embed.${agentId}`, keepLastIfActive: true };
}

/**
 * A signed outbound notification (Standard Webhooks, docs/adr/0018). The endpoint and its secret are
 * read from the tenant's settings when each attempt is sent, so neither sits in Redis and a changed
 * endpoint takes effect on the next retry. `webhookId` is the Standard Webhooks `webhook-id`: the
 * same on every attempt, so the receiver can deduplicate.
 */
export const OutboundWebhookJob = z.object({
  tenantId: z.uuid(),
  webhookId: z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/),
  event: z.string().min(1).max(100),
  payload: z.record(z.string(), z.unknown()),
  /**
   * An A2A push notification (docs/adr/0037) instead of the tenant's notify endpoint: the URL, token
   * and authentication are the config's (`a2a_push_configs`, read at every attempt: a deleted config
   * ends the retries), the body is `payload` itself (the task in the config's wire version), signed
   * with the tenant's secret like every notification.
   */
  a2aPush: z.object({ turnId: z.uuid(), configId: z.string().min(1).max(100) }).optional(),
  trace: TraceCarrier,
});
export type OutboundWebhookJob = z.infer<typeof OutboundWebhookJob>;

/**
 * Cluster-wide housekeeping. Each task is a BullMQ job scheduler whose id is the task
 * name: every process that runs the task upserts it, and the queue still makes one job
 * per interval however many processes do.
 */
/**
 * `reconcile`: every RECONCILE_INTERVAL_MS, what Redis lost and what waited past its time. `leases`:
 * every LEASE_SWEEP_MS, the sessions whose lease expired (a worker died holding them): their next turn
 * woken, the slot they held in their tenant's cap free again (docs/adr/0029). `partitions`: every
 * PARTITION_MAINTENANCE_MS, pg_partman's upkeep of the partitioned tables (docs/adr/0044).
 */
/** `retention`: every RETENTION_INTERVAL_MS, transcripts past their tenant's transcriptRetentionDays purged (docs/adr/0068). */
export const MaintenanceTask = z.enum(['reconcile', 'leases', 'tokenjuice', 'partitions', 'retention']);
export type MaintenanceTask = z.infer<typeof MaintenanceTask>;

export const MaintenanceJob = z.object({
  task: MaintenanceTask,
  trace: TraceCarrier.optional(),
});
export type MaintenanceJob = z.infer<typeof MaintenanceJob>;

/**
 * A job on `schedules` (docs/adr/0020). `fire`: one fire of a schedule, made by the BullMQ job
 * scheduler whose id is the schedule id (job id `repeat:<scheduleId>:<fire millis>`); the processor
 * reads the schedule from Postgres and admits one `timer_tick`. `sync`: the periodic pass that
 * makes the job schedulers match Postgres.
 */
export const ScheduleJob = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('fire'),
    scheduleId: z.uuid(),
    tenantId: z.uuid(),
    trace: TraceCarrier.optional(),
  }),
  z.object({ kind: z.literal('sync'), trace: TraceCarrier.optional() }),
]);
export type ScheduleJob = z.infer<typeof ScheduleJob>;

/**
 * A wake-up of an agent's work (docs/adr/0031): the triage worker runs one activation pass, which
 * admits at most one runtime `system_tick`. `cause` makes the id (`<agentId>.<cause>`): a turn id
 * after a turn ended, `item-<id>` after an enqueue, `at-<millis>` for a timer (a due recheck, a
 * sleep's end), so a repeat of the same cause is a no-op and distinct causes each run.
 */
export const WorkJob = z.object({
  tenantId: z.uuid(),
  agentId: z.uuid(),
  cause: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/),
  trace: TraceCarrier.optional(),
});
export type WorkJob = z.infer<typeof WorkJob>;

/**
 * `tenant-deletion` (docs/adr/0068): one run of a tenant's deletion, a bounded number of batches; what
 * is left is the next run's job. Progress is in Postgres (`tenant_deletions`), so any run resumes.
 */
export const TenantDeletionJob = z.object({
  deletionId: z.uuid(),
  /** A fresh id per run (the job id's tail). */
  run: z.uuid(),
  trace: TraceCarrier.optional(),
});
export type TenantDeletionJob = z.infer<typeof TenantDeletionJob>;

/** The id of the job scheduler that runs the `sync` pass (schedule ids are uuids, so it cannot collide). */
export const SCHEDULE_SYNC_ID = 'sync';

export interface JobDefinition<S extends z.ZodType> {
  queue: QueueName;
  schema: S;
  /** Deterministic job id where a duplicate must be harmless. */
  jobId: (data: z.infer<S>) => string;
  attempts: number;
  backoff: { type: 'exponential' | 'fixed'; delay: number };
  /**
   * Completed jobs are kept this long so a re-add with the same id stays a no-op. 0: removed at
   * completion (docs/adr/0080), for jobs that are wake-ups whose duplicates Postgres makes harmless:
   * the id still deduplicates while the job waits or runs, not after it completed.
   */
  keepCompletedSeconds: number;
  keepFailedSeconds: number;
}

const DAY = 24 * 3600;

/** The catalog: every queue's payload schema, id rule, retries and retention in one place. */
export const Jobs = {
  turn: {
    queue: QueueName.Turns,
    schema: TurnJob,
    jobId: (d: TurnJob) => (d.resume ? `${d.turnId}.${d.resume}` : d.turnId),
    attempts: 5,
    backoff: { type: 'exponential', delay: 1000 },
    // Removed at completion (docs/adr/0080): a turn job is a wake-up and the claim in Postgres runs a
    // turn once, so a re-add after completion only wakes a worker that finds the turn ended (it
    // re-publishes the turn's hooks, whose ids and hook_runs make that a no-op). The reconciler and
    // every waker re-add after a completed job anyway (`requeueTurn`). Saves the completed set's
    // writes and its age sweep on every turn, and a day of completed turn jobs in Redis.
    keepCompletedSeconds: 0,
    keepFailedSeconds: 7 * DAY,
  } satisfies JobDefinition<typeof TurnJob>,
  triage: {
    queue: QueueName.Triage,
    schema: TriageJob,
    jobId: (d: TriageJob) => d.deliveryId,
    attempts: 5,
    backoff: { type: 'exponential', delay: 1000 },
    keepCompletedSeconds: DAY,
    keepFailedSeconds: 7 * DAY,
  } satisfies JobDefinition<typeof TriageJob>,
  postTurn: {
    queue: QueueName.PostTurn,
    schema: PostTurnJob,
    jobId: (d: PostTurnJob) =>
      d.hook === undefined
        ? `${d.turnId}.hooks`
        : d.sessionId
          ? `${d.turnId}.${d.hook}.session`
          : `${d.turnId}.${d.hook}`,
    attempts: 8,
    backoff: { type: 'exponential', delay: 2000 },
    keepCompletedSeconds: DAY,
    keepFailedSeconds: 7 * DAY,
  } satisfies JobDefinition<typeof PostTurnJob>,
  /**
   * Retries with exponential backoff: 5 s, 10 s, 20 s … about 21 minutes over 8 attempts. Producers
   * pass OUTBOUND_WEBHOOK_BACKOFF_MS as the first delay (`publish`'s `backoff` option).
   */
  outboundWebhook: {
    queue: QueueName.OutboundWebhooks,
    schema: OutboundWebhookJob,
    jobId: (d: OutboundWebhookJob) => d.webhookId,
    attempts: 8,
    backoff: { type: 'exponential', delay: 5000 },
    keepCompletedSeconds: DAY,
    keepFailedSeconds: 7 * DAY,
  } satisfies JobDefinition<typeof OutboundWebhookJob>,
  maintenance: {
    queue: QueueName.Maintenance,
    schema: MaintenanceJob,
    /** Also the job scheduler's id; each run's job id is BullMQ's `repeat:<task>:<slot>`. */
    jobId: (d: MaintenanceJob) => d.task,
    // The next interval is the retry.
    attempts: 1,
    backoff: { type: 'fixed', delay: 1000 },
    keepCompletedSeconds: 3600,
    keepFailedSeconds: DAY,
  } satisfies JobDefinition<typeof MaintenanceJob>,
  schedule: {
    queue: QueueName.Schedules,
    schema: ScheduleJob,
    /** Also the job scheduler's id. */
    jobId: (d: ScheduleJob) => (d.kind === 'fire' ? d.scheduleId : SCHEDULE_SYNC_ID),
    // A fire is retried by the job; its admission is idempotent per (schedule, fire time).
    attempts: 5,
    backoff: { type: 'exponential', delay: 1000 },
    keepCompletedSeconds: 3600,
    keepFailedSeconds: 7 * DAY,
  } satisfies JobDefinition<typeof ScheduleJob>,
  work: {
    queue: QueueName.Work,
    schema: WorkJob,
    jobId: (d: WorkJob) => `${d.agentId}.${d.cause}`,
    // The activation is idempotent: a retry admits at most the tick the first attempt did.
    attempts: 5,
    backoff: { type: 'exponential', delay: 1000 },
    keepCompletedSeconds: DAY,
    keepFailedSeconds: 7 * DAY,
  } satisfies JobDefinition<typeof WorkJob>,
  memoryEmbed: {
    queue: QueueName.MemoryEmbed,
    schema: MemoryEmbedJob,
    jobId: (d: MemoryEmbedJob) => `${d.agentId}.${d.run}`,
    // Each run resumes from what Postgres says is left: a retry re-embeds nothing.
    attempts: 8,
    backoff: { type: 'exponential', delay: 2000 },
    keepCompletedSeconds: 3600,
    keepFailedSeconds: 7 * DAY,
  } satisfies JobDefinition<typeof MemoryEmbedJob>,
  tenantDeletion: {
    queue: QueueName.TenantDeletion,
    schema: TenantDeletionJob,
    jobId: (d: TenantDeletionJob) => `${d.deletionId}.${d.run}`,
    // Each run resumes from what Postgres says is left.
    attempts: 10,
    backoff: { type: 'exponential', delay: 2000 },
    keepCompletedSeconds: 3600,
    keepFailedSeconds: 7 * DAY,
  } satisfies JobDefinition<typeof TenantDeletionJob>,
} as const;
