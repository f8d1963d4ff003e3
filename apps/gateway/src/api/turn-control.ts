/** The gateway's TurnControl (libs/admission): cancel, interrupt, the interjection nudge (docs/adr/0014). */
export const TURN_CONTROL = Symbol('TURN_CONTROL');
