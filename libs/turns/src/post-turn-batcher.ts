import type { Queue } from 'bullmq';
import { Jobs, POST_TURN_BATCH_MAX, type TraceCarrier } from '@switchboard/contracts';
import { currentTraceCarrier } from '@switchboard/observability';
import { publish } from '@switchboard/queue';

interface Pending {
  turnId: string;
  tenantId: string;
  trace: TraceCarrier;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * The harness's `post-turn` publishes, coalesced (docs/adr/0070): the turns that end while this
 * process's previous publish is on its way to Redis, or within `windowMs` of the first (HOOKS_BATCH_WINDOW_MS,
 * default 50 ms), go out as ONE job (the first turn's `<turnId>.hooks`, the others in `more`, at most
 * `POST_TURN_BATCH_MAX`), which the hooks worker runs in one transaction. The turn's answer is
 * committed and published before; only its post-turn work waits (and the harness job's slot, for the
 * window at most). A process that ends few turns publishes each alone, as before; a busy one fewer,
 * larger jobs.
 *
 * Each caller's promise settles with its job's publish, so a failed publish fails every turn of it as
 * a lone publish did (the turn job's retry publishes again, the hooks reconcile finds what is left).
 */
export class PostTurnBatcher {
  private pending: Pending[] = [];
  private flushing = false;

  constructor(
    private readonly queue: Queue,
    /** How long the first turn of a job waits for others to end (HOOKS_BATCH_WINDOW_MS); 0: each turn alone. */
    private readonly windowMs = 0,
  ) {}

  add(turn: { turnId: string; tenantId: string }): Promise<void> {
    // No window: each turn's job alone, at once (as before ADR 0070).
    if (this.windowMs <= 0) {
      return publish(this.queue, Jobs.postTurn, turn).then(() => undefined);
    }
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ...turn, trace: currentTraceCarrier(), resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        // Turns that end within the window join the first.
        setTimeout(() => void this.flush(), this.windowMs);
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, POST_TURN_BATCH_MAX);
      const [first, ...more] = batch;
      try {
        await publish(
          this.queue,
          Jobs.postTurn,
          {
            turnId: first.turnId,
            tenantId: first.tenantId,
            ...(more.length > 0
              ? { more: more.map((t) => ({ turnId: t.turnId, tenantId: t.tenantId, trace: t.trace })) }
              : {}),
          },
          // Not kept once it completed (docs/adr/0077): its completion then deletes the job instead of
          // filing it (`ZADD` completed, `HSET` the result, the age sweep of older ones, a later
          // deletion all the same). Its turns' `hook_runs` rows are the record; a re-publish of the
          // same id (a turn job's retry) runs the group again and every hook finds its row.
          { removeOnComplete: true },
        );
        for (const t of batch) t.resolve();
      } catch (err) {
        for (const t of batch) t.reject(err);
      }
    }
    this.flushing = false;
  }
}

const batchers = new WeakMap<Queue, PostTurnBatcher>();

/** The process's one batcher for a `post-turn` queue. */
export function postTurnBatcher(queue: Queue, windowMs = 0): PostTurnBatcher {
  let b = batchers.get(queue);
  if (!b) {
    b = new PostTurnBatcher(queue, windowMs);
    batchers.set(queue, b);
  }
  return b;
}
