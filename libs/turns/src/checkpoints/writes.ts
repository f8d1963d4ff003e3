import type {
  ContextPartInsert,
  CostStatus,
  LedgerInsert,
  MessageInsert,
  RoundContextInsert,
  SessionChanges,
  TaskChanges,
  ToolCallUpsert,
  TurnChanges,
} from '@switchboard/store';

/**
 * A checkpoint's write set, gathered from what the engine records: the store's checkpoint statement
 * (`CheckpointWrites`) without its frame (ids, lease, events), as the engine records it before its commit.
 */
export interface PendingWrites {
  messages: MessageInsert[];
  ledger: LedgerInsert[];
  toolCalls: ToolCallUpsert[];
  turn: TurnChanges;
  session: SessionChanges;
  /** A child turn's task row (docs/adr/0024). */
  task?: TaskChanges;
  /** What the rounds sent (docs/adr/0045): parts not yet written by this run, and each round's part list. */
  contextParts: ContextPartInsert[];
  roundContexts: RoundContextInsert[];
}

export const emptyWrites = (): PendingWrites => ({
  messages: [],
  ledger: [],
  toolCalls: [],
  turn: {},
  session: {},
  contextParts: [],
  roundContexts: [],
});

/** `writes` after `deferred` (their order in the transcript and the ledger), usage summed. */
export function withDeferred(deferred: PendingWrites, writes: PendingWrites): PendingWrites {
  const d = deferred;
  const w = writes;
  const usage = mergeUsage(d.turn.usage, w.turn.usage);
  return {
    messages: [...d.messages, ...w.messages],
    ledger: [...d.ledger, ...w.ledger],
    toolCalls: [...d.toolCalls, ...w.toolCalls],
    turn: {
      ...d.turn,
      ...w.turn,
      ...(usage ? { usage } : {}),
      attempts: [...(d.turn.attempts ?? []), ...(w.turn.attempts ?? [])],
      ...((w.turn.model ?? d.turn.model) ? { model: w.turn.model ?? d.turn.model } : {}),
    },
    session: { ...d.session, ...w.session },
    contextParts: [...d.contextParts, ...w.contextParts],
    roundContexts: [...d.roundContexts, ...w.roundContexts],
    ...((w.task ?? d.task) ? { task: w.task ?? d.task } : {}),
  };
}

const STATUS_RANK: Record<CostStatus, number> = { provider_reported: 0, priced: 1, unpriced: 2 };

/** Two usage totals as one: tokens and USD summed, the weaker cost status kept. */
export function mergeUsage(a: TurnChanges['usage'], b: TurnChanges['usage']): TurnChanges['usage'] {
  if (!a) return b;
  if (!b) return a;
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cachedTokens: a.cachedTokens + b.cachedTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    costUsd: addUsd(a.costUsd, b.costUsd),
    cacheSavedUsd: addSignedUsd(a.cacheSavedUsd, b.cacheSavedUsd),
    costStatus: STATUS_RANK[a.costStatus] >= STATUS_RANK[b.costStatus] ? a.costStatus : b.costStatus,
  };
}

/** Sum of two decimals with 8 places, either sign, exactly. */
export function addSignedUsd(a: string, b: string): string {
  const units = BigInt(a.replace('.', '')) + BigInt(b.replace('.', ''));
  const sign = units < 0n ? '-' : '';
  const digits = (units < 0n ? -units : units).toString().padStart(9, '0');
  return `${sign}${digits.slice(0, -8)}.${digits.slice(-8)}`;
}

/** Sum of two non-negative decimals with 8 places, exactly. */
export function addUsd(a: string, b: string): string {
  const digits = (BigInt(a.replace('.', '')) + BigInt(b.replace('.', ''))).toString().padStart(9, '0');
  return `${digits.slice(0, -8)}.${digits.slice(-8)}`;
}
