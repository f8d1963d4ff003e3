import type { TurnLoad } from '@switchboard/store';
import { promptCacheFor } from './prompt-cache';

const load = (over: { cacheSessionId?: string; approvalRequired?: string[]; decisions?: number } = {}) =>
  ({
    turn: {
      tenantId: 't1',
      sessionId: 's1',
      ...(over.cacheSessionId ? { cacheSessionId: over.cacheSessionId } : {}),
    },
    agent: { id: 'a1', approvalRequired: over.approvalRequired ?? [] },
    decisions: Array.from({ length: over.decisions ?? 0 }, () => ({})),
  }) as unknown as Pick<TurnLoad, 'turn' | 'agent' | 'decisions'>;

describe('promptCacheFor', () => {
  it('keys the cache per tenant, agent and session, hashed; a child on its parent’s agent shares its key', () => {
    const own = promptCacheFor(load(), ['word_count'], []);
    expect(own.key).toMatch(/^sb-[0-9a-f]{40}$/);
    expect(own.key).not.toContain('s1');
    expect(promptCacheFor(load(), [], []).key).toBe(own.key);
    const child = promptCacheFor(load({ cacheSessionId: 'parent' }), [], []);
    const parent = promptCacheFor({ ...load(), turn: { ...load().turn, sessionId: 'parent' } }, [], []);
    expect(child.key).toBe(parent.key);
    expect(child.key).not.toBe(own.key);
  });

  it('asks for the long retention only when the turn may wait', () => {
    expect(promptCacheFor(load(), ['word_count'], []).retention).toBe('short');
    expect(promptCacheFor(load({ approvalRequired: ['send_email'] }), ['send_email'], []).retention).toBe(
      'long',
    );
    expect(promptCacheFor(load(), ['send_email'], ['send_email']).retention).toBe('long');
    // A gated tool the turn is not offered cannot make it wait.
    expect(promptCacheFor(load({ approvalRequired: ['send_email'] }), ['word_count'], []).retention).toBe(
      'short',
    );
    expect(promptCacheFor(load(), ['spawn_subagent'], []).retention).toBe('long');
    expect(promptCacheFor(load(), ['github__create_issue'], []).retention).toBe('long');
    expect(promptCacheFor(load({ decisions: 1 }), [], []).retention).toBe('long');
  });
});
