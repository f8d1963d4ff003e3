import { hash } from 'node:crypto';
import { estimateTokens, estimateToolTokens, type RoundContext } from '@switchboard/engine';
import type { ContextPartInsert, RoundContextInsert, RoundPartRef } from '@switchboard/store';
import type { PendingWrites } from './writes';

/**
 * A stored context part (docs/adr/0045): the system prompt, the tool list, or one message, as JSON
 * with its kind, so the reader rebuilds the round without knowing its shape in advance.
 */
export type ContextPart =
  | { kind: 'system'; text: string }
  | { kind: 'tools'; tools: RoundContext['tools'] }
  | { kind: 'message'; message: RoundContext['messages'][number] };

/**
 * A part's key: the first 128 bits of the SHA-256 of its JSON, hex. Half the bytes of the whole digest
 * in every round's list and in the parts' key, and collision-free for all practical purposes within
 * a tenant's parts. One-shot `crypto.hash`: a Hash object per part cost more than the digest (issue 37).
 */
const partHash = (text: string): string => hash('sha256', text, 'hex').slice(0, 32);

/**
 * Hashes by the object they were computed from: a run's history, its messages and its tool list are
 * the same objects round after round, so a round hashes only what is new to it (the framed input is
 * rebuilt each round and hashed again). Weak: nothing outlives the run's own references.
 */
const hashes = new WeakMap<object, string>();

/** What a run remembers of the context it recorded: the parts it sent, and its last round's list. */
export interface RecordedContext {
  /** Each part goes to the database once per run (one another run or turn stored is skipped by its conflict). */
  written: Set<string>;
  /** Parts known stored (committed earlier, by any run of this process): not sent again. */
  stored?: (hash: string) => boolean;
  /** The run's last recorded round: the next round's list is stored as its extension (docs/adr/0045). */
  last?: { round: number; parts: RoundPartRef[] };
}

/**
 * A round's context as checkpoint writes: its part list, and the parts this run has not written yet
 * (`recorded`, updated here). The first message is the system prompt. A round whose list begins
 * with parts of the run's previous round (a turn's rounds each add their messages to the last) names
 * that round and stores only what follows: only a round this run wrote, in this turn, is a base.
 */
export function roundContextWrites(
  ctx: RoundContext,
  recorded: RecordedContext,
): Pick<PendingWrites, 'contextParts' | 'roundContexts'> {
  const { written } = recorded;
  const contextParts: ContextPartInsert[] = [];
  const refs: RoundContextInsert['parts'] = [];
  const add = (of: object, part: ContextPart, source: string, tokens: () => number) => {
    let h = hashes.get(of);
    if (h === undefined) hashes.set(of, (h = partHash(JSON.stringify(part))));
    refs.push({ h, s: source });
    if (written.has(h) || recorded.stored?.(h)) return;
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
  const round: RoundContextInsert = { round: ctx.round, parts: refs };
  const last = recorded.last;
  if (last && last.round < ctx.round) {
    let keep = 0;
    while (
      keep < last.parts.length &&
      keep < refs.length &&
      last.parts[keep].h === refs[keep].h &&
      last.parts[keep].s === refs[keep].s
    )
      keep++;
    if (keep > 0) round.base = { round: last.round, keep };
  }
  recorded.last = { round: ctx.round, parts: refs };
  return { contextParts, roundContexts: [round] };
}

/**
 * The parts this process has seen committed, by tenant (a bounded set, oldest forgotten first). A
 * turn's history is the session's earlier turns' messages, parts already stored: without this each
 * turn would send them all again for their conflict to skip them. A part is deleted only with its
 * tenant (docs/adr/0045), whose turns no longer run, so a part known here is stored.
 */
export class StoredParts {
  private readonly keys = new Set<string>();

  constructor(private readonly max = 50_000) {}

  has(tenantId: string, hash: string): boolean {
    return this.keys.has(`${tenantId}:${hash}`);
  }

  add(tenantId: string, hash: string): void {
    const key = `${tenantId}:${hash}`;
    if (this.keys.has(key)) return;
    this.keys.add(key);
    if (this.keys.size > this.max) this.keys.delete(this.keys.values().next().value!);
  }
}
