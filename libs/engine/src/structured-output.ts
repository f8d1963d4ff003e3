import { checkStructuredAnswer, repairPrompt, type ResponseFormat } from '@switchboard/contracts';
import type { ChatMessage } from '@switchboard/providers';
import type { FailureArtifact } from './types';

/**
 * Structured output in the loop (docs/adr/0048): only the final answer (an assistant message without
 * tool calls) is checked against the turn's format; tool-calling rounds are not. A mismatch earns
 * one repair round: the model is told what failed and asked again, in a round counted in the budget
 * and cost like any other. A second mismatch fails the turn `structured_output_invalid`.
 */

/** Repair rounds a turn gets before it fails. */
export const MAX_REPAIRS = 1;

/** What the loop does with a final answer under a format. */
export type StructuredDecision =
  | { kind: 'accept'; finalText: string }
  | { kind: 'repair'; prompt: ChatMessage; problem: string }
  | { kind: 'fail'; failure: FailureArtifact };

const isFinal = (m: ChatMessage): boolean => m.role === 'assistant' && m.toolCalls.length === 0;

/**
 * The decision on the last message of `messages`, a final answer: accepted (its JSON text, a Markdown
 * fence around it removed), repaired (the prompt the next round gets), or failed. Every final answer
 * before the last was one rejected, so their number is the repairs already spent.
 */
export function decideStructured(
  format: ResponseFormat,
  messages: readonly ChatMessage[],
  model?: string,
): StructuredDecision {
  const last = messages[messages.length - 1];
  const answer = last?.role === 'assistant' ? last.content : '';
  const check = checkStructuredAnswer(format, answer);
  if (check.ok) return { kind: 'accept', finalText: check.text };
  const repairs = messages.filter(isFinal).length - 1;
  if (repairs < MAX_REPAIRS) {
    return {
      kind: 'repair',
      prompt: { role: 'user', content: repairPrompt(format, check.message) },
      problem: check.message,
    };
  }
  return { kind: 'fail', failure: structuredFailure(format, check.message, model) };
}

/** The turn's failure when the answer still does not match (or the budget left no round to repair it). */
export function structuredFailure(format: ResponseFormat, message: string, model?: string): FailureArtifact {
  const what =
    format.type === 'json_object' ? 'a JSON object' : `JSON valid under the schema "${format.name}"`;
  return {
    kind: 'structured_output_invalid',
    category: 'protocol',
    message,
    brief:
      `The client asked for ${what}, and the turn ended without a final answer that matches (${message}). ` +
      'Simplify the schema, describe the expected shape in the message, or use a model that supports ' +
      'structured output natively.',
    ...(model ? { model } : {}),
  };
}

/**
 * A turn's transcript as the loop sees it: the repair prompts are not stored (they derive from the
 * rejected answer and the format, byte for byte), so a resumed run puts each back after the final
 * answer it answered — every final answer followed by more of the turn was one rejected.
 */
export function withRepairPrompts(
  messages: readonly ChatMessage[],
  format: ResponseFormat | undefined,
): ChatMessage[] {
  if (!format) return [...messages];
  const out: ChatMessage[] = [];
  for (const [i, m] of messages.entries()) {
    out.push(m);
    if (!isFinal(m) || i === messages.length - 1) continue;
    const decision = decideStructured(format, out);
    if (decision.kind === 'repair') out.push(decision.prompt);
  }
  return out;
}
