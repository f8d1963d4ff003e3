/** The gateway's TurnSteering (libs/admission): cancel, interrupt, the interjection nudge (docs/adr/0014). */
export const TURN_STEERING = Symbol('TURN_STEERING');
