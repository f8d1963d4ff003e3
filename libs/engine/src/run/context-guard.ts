import { compactHistory, estimateTokens, withSummary } from '../context';
import { compactionSummary } from '../side-calls/compact';
import type { TurnRun } from './turn-run';

/** The window assumed when the turn does not say its model's. */
const DEFAULT_WINDOW_TOKENS = 128_000;

/**
 * The context guard, before a provider call: near 80% of the model's window, the middle of the
 * history is compacted to half of it (once per run). The omitted middle is written down by the
 * summarizer's model when it can be; else a plain note stands in. The cut is recorded so later
 * turns start from it.
 */
export async function guardContext(run: TurnRun): Promise<void> {
  const window = run.input.contextWindowTokens ?? DEFAULT_WINDOW_TOKENS;
  if (run.compacted || estimateTokens([...run.history, ...run.messages]) <= window * 0.8) return;
  let c = compactHistory(run.history, Math.floor(window * 0.5));
  if (c) {
    const written = await compactionSummary(run, c.dropped, window);
    const summary = written?.record.ok ? written.text : null;
    if (summary !== null) c = withSummary(c, summary);
    // The event commits with the compaction record: later turns start from this cut.
    await run.cp.emit('context_compacted', {
      droppedMessages: c.droppedMessages,
      beforeTokens: c.beforeTokens,
      afterTokens: c.afterTokens,
      summarized: summary !== null,
    });
    await run.cp.recordCompaction(
      { headEnd: c.noteIndex, tailStart: c.tailStart, droppedMessages: c.droppedMessages, summary },
      written?.record,
    );
    run.history = c.history;
  }
  run.compacted = true;
}
