import { readiness } from './ops-server';

describe('readiness', () => {
  const up = { name: 'postgres', check: () => Promise.resolve() };

  it('is ok when every check passes', async () => {
    await expect(readiness([up, { name: 'redis', check: () => Promise.resolve('PONG') }])).resolves.toEqual({
      status: 'ok',
      info: { postgres: { status: 'up' }, redis: { status: 'up' } },
      error: {},
      details: { postgres: { status: 'up' }, redis: { status: 'up' } },
    });
  });

  it('names the check that failed, with its message', async () => {
    const result = await readiness([
      up,
      { name: 'redis', check: () => Promise.reject(new Error('ECONNREFUSED')) },
    ]);
    expect(result.status).toBe('error');
    expect(result.error).toEqual({ redis: { status: 'down', message: 'ECONNREFUSED' } });
    expect(result.info).toEqual({ postgres: { status: 'up' } });
  });

  it('counts a check that does not answer in time as down', async () => {
    const started = performance.now();
    const result = await readiness([{ name: 'postgres', check: () => new Promise(() => undefined) }], {
      timeoutMs: 50,
    });
    expect(result.details).toEqual({ postgres: { status: 'down', message: 'timeout' } });
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('says shutting_down while the process drains, even with every dependency up', async () => {
    await expect(readiness([up], { stopping: true })).resolves.toMatchObject({ status: 'shutting_down' });
  });
});
