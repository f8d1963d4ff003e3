import type { PostTurnHookName, PostTurnJob } from '@switchboard/contracts';
import { runArchivist } from './archivist';
import { runCompletionWebhook } from './completion-webhook';
import type { HookContext, HookOutcome } from './context';
import { runCostLog } from './cost-log';
import { runEpisodicIndex } from './episodic';
import { runLearning } from './learning';
import { runScoring } from './scoring';

export type { HookOutcome };
export type PostTurnHook = (ctx: HookContext, job: PostTurnJob) => Promise<HookOutcome>;

/**
 * Every post-turn hook by name, one handler each: the `post-turn` processor dispatches
 * through this table and nothing else. A name added to `PostTurnHookName` without a
 * handler here does not compile.
 */
export const postTurnHooks: { readonly [K in PostTurnHookName]: PostTurnHook } = {
  'cost-log': runCostLog,
  'completion-webhook': runCompletionWebhook,
  archivist: runArchivist,
  'episodic-index': runEpisodicIndex,
  learning: runLearning,
  scoring: runScoring,
};

/** The handler for a hook name, or undefined for a name this build does not know. */
export function postTurnHook(name: string): PostTurnHook | undefined {
  return Object.hasOwn(postTurnHooks, name) ? postTurnHooks[name as PostTurnHookName] : undefined;
}
