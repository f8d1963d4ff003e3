export const TURN_RUNNER = Symbol('TURN_RUNNER');
/** The engine's per-call policy gates (seed 001 4g); the approval policy among them (docs/adr/0013). */
export const TOOL_GATES = Symbol('TOOL_GATES');
/** The engine's memory recall and context pack (seed 001 stage 1); none until a memory store exists. */
export const CONTEXT_SOURCES = Symbol('CONTEXT_SOURCES');
