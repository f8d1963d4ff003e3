/** Progress event types of SPEC §6, journaled per session with a monotonically increasing seq. */
export const EventType = {
  MessageAdmitted: 'message_admitted',
  TurnStarted: 'turn_started',
  ProviderRoundStarted: 'provider_round_started',
  TextDelta: 'text_delta',
  ProviderRoundCompleted: 'provider_round_completed',
  ToolCallStarted: 'tool_call_started',
  ToolCallCompleted: 'tool_call_completed',
  IterationCompleted: 'iteration_completed',
  ContextCompacted: 'context_compacted',
  SubagentSpawned: 'subagent_spawned',
  SubagentCompleted: 'subagent_completed',
  ReflectionCompleted: 'reflection_completed',
  ApprovalRequested: 'approval_requested',
  StopHookFired: 'stop_hook_fired',
  ContextUnavailable: 'context_unavailable',
  TurnCompleted: 'turn_completed',
  TurnFailed: 'turn_failed',
  TurnCancelled: 'turn_cancelled',
} as const;
export type EventType = (typeof EventType)[keyof typeof EventType];

export const TurnStatus = {
  Queued: 'queued',
  Running: 'running',
  AwaitingApproval: 'awaiting_approval',
  Completed: 'completed',
  Failed: 'failed',
  Cancelled: 'cancelled',
} as const;
export type TurnStatus = (typeof TurnStatus)[keyof typeof TurnStatus];

export const TERMINAL_TURN_STATUSES: readonly TurnStatus[] = ['completed', 'failed', 'cancelled'];
export const isTerminal = (s: string): boolean => (TERMINAL_TURN_STATUSES as readonly string[]).includes(s);
