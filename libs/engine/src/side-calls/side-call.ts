import {
  cacheSavingsUsd,
  costOf,
  ProviderError,
  tracedComplete,
  type ChatMessage,
  type PriceOverrides,
  type ProviderRegistry,
} from '@switchboard/providers';
import type { TurnRun } from '../run/turn-run';
import type { SideCallRecord } from '../types';

/**
 * Model calls outside the loop's rounds (the summarizer sub-agent, reflection,
 * compaction summaries): one attempt, no tools, no fallback. They are
 * optional work, so a failure is reported, never thrown into the loop.
 */
export interface SideCallResult {
  text: string;
  record: SideCallRecord;
}

export async function sideCall(
  providers: ProviderRegistry,
  purpose: SideCallRecord['purpose'],
  ref: string,
  messages: ChatMessage[],
  signal: AbortSignal,
  prices?: PriceOverrides,
): Promise<SideCallResult> {
  let resolved;
  try {
    resolved = providers.resolve(ref);
  } catch (err) {
    return { text: '', record: { purpose, ok: false, model: ref, costUsd: 0, error: message(err) } };
  }
  try {
    const r = await tracedComplete(
      resolved,
      { messages, tools: [], signal },
      { 'switchboard.side_call.purpose': purpose },
    );
    const cost = costOf(resolved.provider.name, resolved.model, r.usage, r.reportedCostUsd, prices);
    const text = r.text.trim();
    return {
      text,
      record: {
        purpose,
        ok: text.length > 0,
        model: ref,
        provider: resolved.provider.name,
        usage: r.usage,
        costUsd: cost.usd,
        costSource: cost.source,
        cacheSavedUsd: cacheSavingsUsd(resolved.provider.name, resolved.model, r.usage, prices),
        ...(text.length > 0 ? {} : { error: 'the model returned no text' }),
      },
    };
  } catch (err) {
    return { text: '', record: { purpose, ok: false, model: ref, costUsd: 0, error: message(err) } };
  }
}

/** A side call of this run, on its providers, signal and prices; its cost is booked to the run's spend. */
export async function runSideCall(
  run: TurnRun,
  purpose: SideCallRecord['purpose'],
  model: string,
  messages: ChatMessage[],
): Promise<SideCallResult> {
  const r = await sideCall(run.resources.providers, purpose, model, messages, run.signal, run.input.prices);
  run.spentUsd += r.record.costUsd;
  return r;
}

function message(err: unknown): string {
  if (err instanceof ProviderError) return `${err.kind}: ${err.message}`.slice(0, 500);
  return (err instanceof Error ? err.message : String(err)).slice(0, 500);
}

/** One message of a transcript as a line (or a few) of text, for a side call that reads the turn. */
export function renderForSummary(m: ChatMessage): string {
  switch (m.role) {
    case 'assistant': {
      const calls = m.toolCalls.map((c) => `  → ${c.name}(${c.arguments})`).join('\n');
      return `assistant: ${m.content}${calls ? `\n${calls}` : ''}`;
    }
    case 'tool':
      return `tool ${m.name} result: ${m.content}`;
    case 'system':
    case 'user':
      return `${m.role}: ${m.content}`;
  }
}
