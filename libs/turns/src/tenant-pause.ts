import type { Queue } from 'bullmq';
import type { Logger } from '@switchboard/observability';
import { withTimeout } from '@switchboard/queue';
import type { PauseChange, TenantsRepository, TurnStore } from '@switchboard/store';
import { requeueTurn } from './requeue';

/** Sessions read per page when a resumed tenant's turns are woken. */
const WAKE_PAGE = 500;

/**
 * Publishes one wake-up job per session of the tenant that has turns to run (its next turn in drain
 * order; sessions behind a waiting turn are woken by the decision that ends the wait), through the
 * reconciler's own re-enqueue (`requeueTurn`). A Redis that does not answer within `timeoutMs` stops
 * the wake: the reconciler enqueues the rest, as it does after any lost enqueue. Answers how many jobs
 * were published.
 */
export async function wakeTenant(
  store: TurnStore,
  turnsQueue: Queue,
  logger: Logger,
  tenantId: string,
  timeoutMs = 2000,
): Promise<number> {
  let woken = 0;
  let after: string | undefined;
  try {
    for (;;) {
      const page = await store.turnsToWake(tenantId, after, WAKE_PAGE);
      for (const t of page) {
        const published = requeueTurn(turnsQueue, t, 'wake resumed turn');
        published.catch(() => undefined);
        if (await withTimeout(published, timeoutMs)) woken++;
      }
      if (page.length < WAKE_PAGE) break;
      after = page[page.length - 1].sessionId;
    }
  } catch (err) {
    logger.error(
      { err, tenantId, woken },
      'waking a resumed tenant failed; the reconciler will enqueue the rest',
    );
  }
  return woken;
}

/**
 * The operator's pause and resume of a tenant (docs/adr/0030), shared by the admin API and the admin
 * CLI. Pause: the kill switch on (running turns stop at their next safe point, admission answers
 * 403 tenant_paused, claims hold queued turns) with its audit entry. Resume: the kill switch off with
 * its audit entry, then one wake-up job per session with turns to run.
 */
export class TenantPause {
  constructor(
    private readonly tenants: TenantsRepository,
    private readonly store: TurnStore,
    private readonly turnsQueue: Queue,
    private readonly logger: Logger,
  ) {}

  pause(tenantId: string, reason: string | null, actor: string): Promise<PauseChange> {
    return this.tenants.pause(tenantId, reason, actor);
  }

  /**
   * Resumes, then wakes the tenant's sessions. A tenant that was not paused is woken too: a repeated
   * resume finishes a wake that a Redis outage cut short.
   */
  async resume(tenantId: string, actor: string): Promise<PauseChange & { woken?: number }> {
    const change = await this.tenants.resume(tenantId, actor);
    if (!change.found) return change;
    const woken = await wakeTenant(this.store, this.turnsQueue, this.logger, tenantId);
    if (change.changed) this.logger.info({ tenantId, woken }, 'tenant resumed; its sessions woken');
    return { ...change, woken };
  }
}
