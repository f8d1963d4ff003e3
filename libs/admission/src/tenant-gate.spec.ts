import { TenantGate } from './tenant-gate';

/** A promise and its resolver, to hold an admission open. */
function held() {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  return { done, release };
}

describe('TenantGate', () => {
  it('runs at most `limit` of one tenant at once, the rest in arrival order, other tenants beside them', async () => {
    const gate = new TenantGate(2);
    const order: string[] = [];
    const holds = Array.from({ length: 4 }, () => held());
    const a = holds.map((h, i) =>
      gate.run('a', async () => {
        order.push(`a${i} start`);
        await h.done;
      }),
    );
    await Promise.resolve();
    expect(gate.load('a')).toEqual({ active: 2, waiting: 2 });
    // Another tenant is not behind the burst.
    await gate.run('b', async () => {
      order.push('b start');
    });
    expect(order).toEqual(['a0 start', 'a1 start', 'b start']);
    holds[1].release();
    await a[1];
    await new Promise((r) => setImmediate(r));
    expect(order.at(-1)).toBe('a2 start');
    holds.forEach((h) => h.release());
    await Promise.all(a);
    expect(order).toEqual(['a0 start', 'a1 start', 'b start', 'a2 start', 'a3 start']);
    expect(gate.load('a')).toEqual({ active: 0, waiting: 0 });
  });

  it('frees the place when the admission fails', async () => {
    const gate = new TenantGate(1);
    await expect(gate.run('a', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(gate.load('a')).toEqual({ active: 0, waiting: 0 });
    await expect(gate.run('a', () => Promise.resolve(7))).resolves.toBe(7);
  });

  it('limits nothing at 0', async () => {
    const gate = new TenantGate(0);
    const h = held();
    const running = gate.run('a', () => h.done);
    await expect(gate.run('a', () => Promise.resolve('beside'))).resolves.toBe('beside');
    h.release();
    await running;
  });
});
