/** The post-turn policy (`PostTurnHooks`, libs/hooks) the `post-turn` processor hands its jobs to. */
export const POST_TURN_HOOKS = Symbol('POST_TURN_HOOKS');
