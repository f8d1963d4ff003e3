import { CONTENTION_WINDOW_MS, TenantGate } from './tenant-gate';

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

  it('gives a lone tenant its whole bound, and every tenant the contended bound while another admits too', async () => {
    let now = 1_000_000;
    const gate = new TenantGate(4, 1, () => now);
    const holds = Array.from({ length: 6 }, () => held());
    const started: number[] = [];
    const a = holds.map((h, i) =>
      gate.run('a', async () => {
        started.push(i);
        await h.done;
      }),
    );
    await Promise.resolve();
    // Alone: four at once.
    expect(gate.load('a')).toEqual({ active: 4, waiting: 2 });
    expect(gate.limitFor('a')).toBe(4);
    // B admits (and is not behind A's four): from now on both are bounded to one.
    await gate.run('b', async () => {
      expect(gate.limitFor('a')).toBe(1);
    });
    expect(gate.limitFor('a')).toBe(1);
    // A's running admissions end; no waiter starts while A is at or over its contended bound.
    holds[0].release();
    holds[1].release();
    await Promise.all([a[0], a[1]]);
    expect(gate.load('a')).toEqual({ active: 2, waiting: 2 });
    holds[2].release();
    holds[3].release();
    await Promise.all([a[2], a[3]]);
    await new Promise((r) => setImmediate(r));
    expect(gate.load('a')).toEqual({ active: 1, waiting: 1 });
    expect(started).toEqual([0, 1, 2, 3, 4]);
    // A second after B's last admission, A is alone again and its waiters start up to the bound.
    now += CONTENTION_WINDOW_MS;
    expect(gate.limitFor('a')).toBe(4);
    holds[4].release();
    await a[4];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    holds[5].release();
    await Promise.all(a);
    expect(gate.load('a')).toEqual({ active: 0, waiting: 0 });
  });

  it('keeps arrival order within a tenant: a new admission never overtakes a waiting one', async () => {
    let now = 0;
    const gate = new TenantGate(2, 1, () => now);
    const order: string[] = [];
    const admit = (name: string, until?: Promise<void>) =>
      gate.run('a', async () => {
        order.push(name);
        await until;
      });
    const h = [held(), held()];
    const running = [admit('a0', h[0].done), admit('a1', h[1].done)];
    const waiting = admit('a2');
    await gate.run('b', async () => void order.push('b'));
    h[0].release();
    await running[0];
    // Contended: A has one running (its bound), a2 still waits, and a later one queues behind it.
    expect(gate.load('a')).toEqual({ active: 1, waiting: 1 });
    const late = admit('a-late');
    now += CONTENTION_WINDOW_MS;
    h[1].release();
    await Promise.all([running[1], waiting, late]);
    expect(order).toEqual(['a0', 'a1', 'b', 'a2', 'a-late']);
  });
});
