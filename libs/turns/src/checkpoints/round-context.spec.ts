import { createHash } from 'node:crypto';
import type { RoundContext } from '@switchboard/engine';
import { roundContextWrites } from './round-context';

const ctx = (messages: RoundContext['messages'], round = 0): RoundContext => ({
  round,
  messages,
  sources: messages.map((m, i) => (i === 0 ? 'system' : i === 1 ? 'recall' : 'transcript')),
  tools: [{ name: 'word_count', description: 'counts', parameters: { type: 'object' } }],
});

describe('roundContextWrites (docs/adr/0045)', () => {
  const system = { role: 'system' as const, content: 'You are the agent.' };
  const input = { role: 'user' as const, content: 'count these words' };
  const call = {
    role: 'assistant' as const,
    content: '',
    toolCalls: [{ id: 'c1', name: 'word_count', arguments: '{"text":"a b"}' }],
  };
  const result = { role: 'tool' as const, toolCallId: 'c1', name: 'word_count', content: '{"ok":true}' };

  it('lists every part in order with its source: system, tools, then the messages', () => {
    const w = roundContextWrites(ctx([system, input]), { written: new Set() });
    expect(w.roundContexts).toHaveLength(1);
    expect(w.roundContexts[0].round).toBe(0);
    expect(w.roundContexts[0].parts.map((p) => p.s)).toEqual(['system', 'tools', 'recall']);
    expect(w.contextParts.map((p) => p.content)).toEqual([
      { kind: 'system', text: 'You are the agent.' },
      { kind: 'tools', tools: ctx([]).tools },
      { kind: 'message', message: input },
    ]);
    for (const p of w.contextParts) {
      expect(p.hash).toMatch(/^[0-9a-f]{32}$/);
      expect(p.tokens).toBeGreaterThan(0);
    }
  });

  it("keys a part by the first 128 bits of its JSON's SHA-256, as parts stored before were keyed", () => {
    const w = roundContextWrites(ctx([system, input]), { written: new Set() });
    for (const p of w.contextParts)
      expect(p.hash).toBe(createHash('sha256').update(JSON.stringify(p.content)).digest('hex').slice(0, 32));
  });

  it('sends a part once per run: a later round carries only its new messages', () => {
    const sent = { written: new Set<string>() };
    const first = roundContextWrites(ctx([system, input]), sent);
    const second = roundContextWrites(ctx([system, input, call, result], 1), sent);
    expect(second.roundContexts[0].parts).toHaveLength(5);
    expect(second.roundContexts[0].parts.slice(0, 3)).toEqual(first.roundContexts[0].parts);
    expect(second.contextParts.map((p) => p.content)).toEqual([
      { kind: 'message', message: call },
      { kind: 'message', message: result },
    ]);
  });

  it('the same content hashes the same; a changed message is a new part', () => {
    const a = roundContextWrites(ctx([system, input]), { written: new Set() });
    const b = roundContextWrites(ctx([system, { ...input, content: 'other' }]), { written: new Set() });
    expect(a.roundContexts[0].parts[0].h).toBe(b.roundContexts[0].parts[0].h);
    expect(a.roundContexts[0].parts[2].h).not.toBe(b.roundContexts[0].parts[2].h);
  });

  it("a round extending the run's previous round names it as its base, with the parts it keeps", () => {
    const sent = { written: new Set<string>() };
    const first = roundContextWrites(ctx([system, input]), sent);
    expect(first.roundContexts[0].base).toBeUndefined();
    const second = roundContextWrites(ctx([system, input, call, result], 1), sent);
    expect(second.roundContexts[0].base).toEqual({ round: 0, keep: 3 });
    // A list that departs from the last one early keeps only the common prefix.
    const third = roundContextWrites(ctx([system, { ...input, content: 'other' }], 2), sent);
    expect(third.roundContexts[0].base).toEqual({ round: 1, keep: 2 });
    // The same round again (a resumed run writes it whole): no base.
    const again = roundContextWrites(ctx([system, input], 2), sent);
    expect(again.roundContexts[0].base).toBeUndefined();
  });
});
