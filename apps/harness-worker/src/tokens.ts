export const TURN_RUNNER = Symbol('TURN_RUNNER');
