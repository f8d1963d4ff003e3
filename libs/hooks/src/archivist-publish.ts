import type { Queue } from 'bullmq';
import { Jobs, type PostTurnJob } from '@switchboard/contracts';
import { publish } from '@switchboard/queue';
import { archivistSessionDedup } from './archivist';

/**
 * Whether the job BullMQ's deduplication key names is in the queue's delayed set: one round trip,
 * three commands in Redis (EVAL, GET, ZSCORE). Keys as bullmq 5 lays them out: `<queue>:de:<id>` and
 * `<queue>:delayed` (the archivist-debounce spec fails if that changes: a publish it expects skipped
 * would be made).
 */
const DELAYED = `local id = redis.call('GET', KEYS[1])
if id and redis.call('ZSCORE', KEYS[2], id) then return 1 end
return 0`;

/**
 * Publishes a session's distillation (docs/adr/0032, 0074) unless it would change nothing: a
 * publish with a delay while the session's job waits in the delayed set is skipped. That job has not
 * read the session's deferred turns yet — the caller's deferral row committed before this call — so
 * it distils them when it fires, or, fired before the session was idle for `idleMs` since its newest
 * deferred turn, publishes itself again for the rest (`runSession`). A publish for a run now
 * (`delayMs` 0) always goes out and replaces the delayed job. Resolves with whether it published.
 */
export async function publishSessionDistillation(
  queue: Queue,
  job: Omit<PostTurnJob, 'trace'>,
  delayMs: number,
): Promise<boolean> {
  const dedup = archivistSessionDedup(job.sessionId ?? job.turnId, delayMs);
  if (delayMs > 0) {
    const client = (await queue.client) as unknown as {
      eval(script: string, numKeys: number, ...keys: string[]): Promise<unknown>;
    };
    // A check that fails publishes (the publish reports Redis's error, as before).
    const delayed = await client
      .eval(DELAYED, 2, queue.toKey(`de:${dedup.id}`), queue.keys.delayed)
      .catch(() => 0);
    if (delayed === 1) return false;
  }
  await publish(queue, Jobs.postTurn, job, { delay: delayMs, deduplication: dedup });
  return true;
}
