/** The post-turn policy (`PostTurnHooks`, libs/hooks) the `post-turn` processor hands its jobs to. */
export const POST_TURN_HOOKS = Symbol('POST_TURN_HOOKS');
/** The hooks worker's typed SQL on the process's pool (`sqlDbFor(poolOf(db), 'hooks', metrics)`). */
export const HOOKS_SQL = Symbol('HOOKS_SQL');
