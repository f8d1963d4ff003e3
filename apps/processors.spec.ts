import type { DynamicModule, Provider } from '@nestjs/common';
import type IORedis from 'ioredis';
import { loadConfig } from '@switchboard/config';
import { Jobs, PostTurnHookName, QueueName } from '@switchboard/contracts';
import { postTurnHook, postTurnHooks } from '@switchboard/hooks';
import { processorSpec, REDIS, workerOptions } from '@switchboard/platform';
import { HarnessModule } from './harness-worker/src/harness.module';
import { HooksModule } from './hooks-worker/src/hooks.module';
import { TriageModule } from './triage-worker/src/triage.module';

/**
 * Every queue that has a job definition is consumed by exactly one processor across the
 * worker apps (two would race for its jobs, none would strand them), and every post-turn
 * hook name has exactly one handler.
 */
describe('processors across the apps', () => {
  const vars = {
    DATABASE_URL: 'postgresql://localhost:5432/unused',
    ADMIN_TOKEN: 'test-admin-token-0123456789',
  };
  const config = loadConfig(vars);
  const apps: Record<string, DynamicModule> = {
    'harness-worker': HarnessModule.forRoot(config),
    'hooks-worker': HooksModule.forRoot(config),
    'triage-worker': TriageModule.forRoot(config),
  };

  /** The providers a module declares, its imported dynamic modules' included. */
  function providers(mod: DynamicModule): Provider[] {
    const imported = (mod.imports ?? []).filter(
      (m): m is DynamicModule => typeof m === 'object' && 'module' in m,
    );
    return [...(mod.providers ?? []), ...imported.flatMap(providers)];
  }

  afterAll(() => {
    // forRoot opened each app's Redis connection; nothing here uses it.
    for (const mod of Object.values(apps)) {
      for (const p of providers(mod)) {
        if (typeof p === 'object' && 'provide' in p && p.provide === REDIS && 'useValue' in p) {
          (p.useValue as IORedis).disconnect();
        }
      }
    }
  });

  it('gives every queue with a job definition exactly one processor', () => {
    const consumers = Object.entries(apps).flatMap(([app, mod]) =>
      providers(mod).flatMap((p) => {
        const spec = processorSpec(p);
        return spec ? [{ app, queue: spec.queue, processor: (p as { name: string }).name }] : [];
      }),
    );
    const defined = [...new Set(Object.values(Jobs).map((def) => def.queue))].sort();
    for (const queue of defined) {
      expect({ queue, processors: consumers.filter((c) => c.queue === queue) }).toEqual({
        queue,
        processors: [expect.objectContaining({ queue })],
      });
    }
    // And no processor for a queue nothing defines jobs for.
    expect(consumers.map((c) => c.queue).sort()).toEqual(defined);
    expect(defined).toContain(QueueName.Maintenance);
  });

  it('gives every post-turn hook name exactly one handler, and none to an unknown name', () => {
    expect(Object.keys(postTurnHooks).sort()).toEqual([...PostTurnHookName.options].sort());
    for (const name of PostTurnHookName.options) expect(postTurnHook(name)).toEqual(expect.any(Function));
    expect(postTurnHook('nope')).toBeUndefined();
    expect(postTurnHook('constructor')).toBeUndefined();
  });

  it('lets a post-turn job survive HOOKS_MAX_STALLED_COUNT worker deaths; other queues keep BullMQ’s default', () => {
    const specs = Object.values(apps).flatMap((mod) =>
      providers(mod).flatMap((p) => {
        const spec = processorSpec(p);
        return spec ? [spec] : [];
      }),
    );
    const stalls = (c: typeof config) =>
      Object.fromEntries(
        specs.map((spec) => [spec.queue, workerOptions(c, spec, undefined as never).maxStalledCount]),
      );
    expect(stalls(config)).toEqual(
      Object.fromEntries(specs.map((s) => [s.queue, s.queue === QueueName.PostTurn ? 10 : undefined])),
    );
    const lenient = loadConfig({ ...vars, HOOKS_MAX_STALLED_COUNT: '25' });
    expect(stalls(lenient)[QueueName.PostTurn]).toBe(25);
  });
});
