export * from './agent-turns';
export * from './event-streams';
export { OPERATOR_PROMPT } from './operator-prompt';
export { sessionIdForKey } from './session-key';
export type { TurnDetail } from './turn-detail';
export * from './turn-waiter';
export * from './client-tools';
