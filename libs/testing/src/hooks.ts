import type { PostTurnHookName, PostTurnJob } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import type { HookContext } from '@switchboard/hooks';
import { createLogger, Metrics } from '@switchboard/observability';
import { sqlDbFor } from '@switchboard/store';
import type { TestEnv } from './env';

/**
 * What a post-turn hook is handed, over this test file's database: a silent logger, fresh metrics
 * (or the ones given, to read after the run) and the store on the same pg pool, counted as `hooks`.
 * `notify`, `models` and `deferArchivist` are the hook's own and passed as they are.
 */
export function hookContext(
  env: TestEnv,
  options: { metrics?: Metrics } & Pick<
    HookContext,
    'notify' | 'models' | 'deferArchivist' | 'evaluation'
  > = {},
): HookContext {
  const { metrics = new Metrics('test'), ...rest } = options;
  return {
    db: env.db,
    sql: sqlDbFor(poolOf(env.db), 'hooks', metrics),
    logger: createLogger({ service: 'test', level: 'silent' }),
    metrics,
    ...rest,
  };
}

/** The post-turn job a hook runs for one turn of one tenant. */
export const hookJob = (hook: PostTurnHookName, turnId: string, tenantId: string): PostTurnJob => ({
  turnId,
  tenantId,
  hook,
  trace: {},
});
