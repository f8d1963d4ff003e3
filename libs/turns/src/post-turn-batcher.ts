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
 * process's previous publish is on its way to Redis, or in the same turn of the event loop, go out as
 * ONE job (the first turn's `<turnId>.hooks`, the others in `more`, at most `POST_TURN_BATCH_MAX`),
 * which the hooks worker runs in one transaction. No timer holds a turn back: an idle process
 * publishes each turn's job at once, alone, as before; a busy one publishes fewer, larger jobs.
 *
 * Each caller's promise settles with its job's publish, so a failed publish fails every turn of it as
 * a lone publish did (the turn job's retry publishes again, the hooks reconcile finds what is left).
 */
export class PostTurnBatcher {
  private pending: Pending[] = [];
  private flushing = false;

  constructor(private readonly queue: Queue) {}

  add(turn: { turnId: string; tenantId: string }): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ...turn, trace: currentTraceCarrier(), resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        // Turns that end in this turn of the event loop join the first.
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, POST_TURN_BATCH_MAX);
      const [first, ...more] = batch;
      try {
        await publish(this.queue, Jobs.postTurn, {
          turnId: first.turnId,
          tenantId: first.tenantId,
          ...(more.length > 0
            ? { more: more.map((t) => ({ turnId: t.turnId, tenantId: t.tenantId, trace: t.trace })) }
            : {}),
        });
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
export function postTurnBatcher(queue: Queue): PostTurnBatcher {
  let b = batchers.get(queue);
  if (!b) {
    b = new PostTurnBatcher(queue);
    batchers.set(queue, b);
  }
  return b;
}
