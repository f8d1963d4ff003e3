/**
 * At most a limit of admissions of one tenant at a time in this process; the rest wait their turn in
 * arrival order (docs/adr/0029). A tenant's burst then shares the gateway's event loop with other
 * tenants' requests instead of filling it: another tenant's admission runs beside a few of the
 * burst's, not behind all of them. Nothing is refused (the rate limits refuse, ADR 0028); a waiting
 * request only waits. Plain TypeScript: `Admission` owns one.
 *
 * Work-conserving: a tenant alone in the process gets `limit` at once; while another tenant is
 * admitting too (one running now, or one that started within `CONTENTION_WINDOW_MS`), every tenant
 * gets `contendedLimit`. So a lone burst admits at full speed, and a neighbour's turn, whose waits,
 * events and answer go through the same event loop, does not queue behind `limit` of the burst's
 * admissions at every step (measured with `npm run bench:tenants`, docs/BENCHMARKS.md).
 */
export const CONTENTION_WINDOW_MS = 1_000;

export class TenantGate {
  private readonly tenants = new Map<string, { active: number; waiting: (() => void)[] }>();
  /** The two most recent distinct tenants to start an admission, newest first. */
  private readonly recent: { tenantId: string; at: number }[] = [];
  private readonly contendedLimit: number;

  constructor(
    private readonly limit: number,
    /** The bound while another tenant is admitting too; 0 or absent: `limit` always. */
    contendedLimit = 0,
    private readonly now: () => number = Date.now,
  ) {
    this.contendedLimit = contendedLimit > 0 ? Math.min(contendedLimit, limit) : limit;
  }

  /** Runs `fn` once the tenant has a free place; the place is freed however `fn` ends. */
  async run<T>(tenantId: string, fn: () => Promise<T>): Promise<T> {
    if (this.limit <= 0) return fn();
    this.seen(tenantId);
    let t = this.tenants.get(tenantId);
    if (!t) {
      t = { active: 0, waiting: [] };
      this.tenants.set(tenantId, t);
    }
    if (t.waiting.length === 0 && t.active < this.limitFor(tenantId)) t.active++;
    // The place is handed over with `active` already counted (`release`).
    else await new Promise<void>((resolve) => t.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      t.active--;
      this.release(tenantId, t);
    }
  }

  /** The tenant's bound now: `limit` alone, `contendedLimit` while another tenant admits. */
  limitFor(tenantId: string): number {
    return this.contended(tenantId) ? this.contendedLimit : this.limit;
  }

  /** Admissions of the tenant running and waiting now (for tests and metrics). */
  load(tenantId: string): { active: number; waiting: number } {
    const t = this.tenants.get(tenantId);
    return { active: t?.active ?? 0, waiting: t?.waiting.length ?? 0 };
  }

  /** Starts waiters while the tenant is under its bound; the last one out forgets the tenant. */
  private release(tenantId: string, t: { active: number; waiting: (() => void)[] }): void {
    const bound = this.limitFor(tenantId);
    while (t.waiting.length > 0 && t.active < bound) {
      t.active++;
      t.waiting.shift()!();
    }
    if (t.active === 0 && t.waiting.length === 0) this.tenants.delete(tenantId);
  }

  private seen(tenantId: string): void {
    const at = this.now();
    if (this.recent[0]?.tenantId === tenantId) this.recent[0].at = at;
    else {
      this.recent.unshift({ tenantId, at });
      this.recent.length = Math.min(this.recent.length, 2);
    }
  }

  private contended(tenantId: string): boolean {
    if (this.contendedLimit === this.limit) return false;
    // Another tenant running or waiting here now.
    if (this.tenants.size > (this.tenants.has(tenantId) ? 1 : 0)) return true;
    const other = this.recent[0]?.tenantId === tenantId ? this.recent[1] : this.recent[0];
    return other !== undefined && this.now() - other.at < CONTENTION_WINDOW_MS;
  }
}
