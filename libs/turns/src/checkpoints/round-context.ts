import { createHash } from 'node:crypto';
import { estimateTokens, estimateToolTokens, type RoundContext } from '@switchboard/engine';
import type { ContextPartInsert, RoundContextInsert } from '@switchboard/store';
import type { PendingWrites } from './writes';

/**
 * A stored context part (docs/adr/0045): the system prompt, the tool list, or one message, as JSON
 * with its kind, so the reader rebuilds the round without knowing its shape in advance.
 */
export type ContextPart =
  | { kind: 'system'; text: string }
  | { kind: 'tools'; tools: RoundContext['tools'] }
  | { kind: 'message'; message: RoundContext['messages'][number] };

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * Hashes by the object they were computed from: a run's history, its messages and its tool list are
 * the same objects round after round, so a round hashes only what is new to it (the framed input is
 * rebuilt each round and hashed again). Weak: nothing outlives the run's own references.
 */
const hashes = new WeakMap<object, string>();

/**
 * A round's context as checkpoint writes: its part list, and the parts this run has not written yet
 * (`written`, updated here: a part is sent to the database once per run, and a part another run or
 * turn already stored is skipped by its conflict). The first message is the system prompt.
 */
export function roundContextWrites(
  ctx: RoundContext,
  written: Set<string>,
): Pick<PendingWrites, 'contextParts' | 'roundContexts'> {
  const contextParts: ContextPartInsert[] = [];
  const refs: RoundContextInsert['parts'] = [];
  const add = (of: object, part: ContextPart, source: string, tokens: () => number) => {
    let h = hashes.get(of);
    if (h === undefined) hashes.set(of, (h = sha256(JSON.stringify(part))));
    refs.push({ h, s: source });
    if (written.has(h)) return;
    written.add(h);
    contextParts.push({ hash: h, content: part, tokens: tokens() });
  };
  const [first, ...rest] = ctx.messages;
  const system = first?.role === 'system' ? first : undefined;
  if (system) add(system, { kind: 'system', text: system.content }, 'system', () => estimateTokens([system]));
  // The tools come after the system prompt in the part list, as a request carries them.
  add(ctx.tools, { kind: 'tools', tools: ctx.tools }, 'tools', () => estimateToolTokens(ctx.tools));
  const messages = system ? rest : ctx.messages;
  const offset = system ? 1 : 0;
  messages.forEach((m, i) =>
    add(m, { kind: 'message', message: m }, ctx.sources[i + offset] ?? 'other', () => estimateTokens([m])),
  );
  return { contextParts, roundContexts: [{ round: ctx.round, parts: refs }] };
}
