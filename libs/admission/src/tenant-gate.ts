/**
 * At most `limit` admissions of one tenant at a time in this process; the rest wait their turn in
 * arrival order (docs/adr/0029). A tenant's burst then shares the gateway's event loop with other
 * tenants' requests instead of filling it: another tenant's admission runs beside `limit` of the
 * burst's, not behind all of them. Nothing is refused (the rate limits refuse, ADR 0028); a waiting
 * request only waits. Plain TypeScript: `Admission` owns one.
 */
export class TenantGate {
  private readonly tenants = new Map<string, { active: number; waiting: (() => void)[] }>();

  constructor(private readonly limit: number) {}

  /** Runs `fn` once the tenant has a free place; the place is freed however `fn` ends. */
  async run<T>(tenantId: string, fn: () => Promise<T>): Promise<T> {
    if (this.limit <= 0) return fn();
    let t = this.tenants.get(tenantId);
    if (!t) {
      t = { active: 0, waiting: [] };
      this.tenants.set(tenantId, t);
    }
    if (t.active < this.limit) t.active++;
    else await new Promise<void>((resolve) => t.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = t.waiting.shift();
      // The place passes straight to the next waiter; the last one out forgets the tenant.
      if (next) next();
      else if (--t.active === 0) this.tenants.delete(tenantId);
    }
  }

  /** Admissions of the tenant running and waiting now (for tests and metrics). */
  load(tenantId: string): { active: number; waiting: number } {
    const t = this.tenants.get(tenantId);
    return { active: t?.active ?? 0, waiting: t?.waiting.length ?? 0 };
  }
}
