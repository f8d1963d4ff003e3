import { applyRules, TriageRule, TriageRules, type TriggerEvent } from './rules';

const event = (overrides: Partial<TriggerEvent> = {}): TriggerEvent => ({
  source: 'github',
  eventType: 'pull_request',
  payload: { action: 'opened', pull_request: { draft: false, number: 7, labels: [{ name: 'bug' }] } },
  ...overrides,
});

const rule = (match: TriageRule['match'], action: TriageRule['action'], reason?: string): TriageRule =>
  TriageRule.parse({ match, action, ...(reason ? { reason } : {}) });

describe('applyRules', () => {
  it('forwards when no rule matches', () => {
    expect(applyRules([], event())).toEqual({ action: 'forward', reason: 'no rule matched', rule: null });
    expect(applyRules([rule({ source: 'stripe' }, 'drop')], event())).toEqual({
      action: 'forward',
      reason: 'no rule matched',
      rule: null,
    });
  });

  it('lets the first matching rule decide', () => {
    const rules = [
      rule({ source: 'stripe' }, 'forward', 'payments'),
      rule({ source: 'github' }, 'drop', 'noisy'),
      rule({ source: 'github' }, 'forward', 'never reached'),
    ];
    expect(applyRules(rules, event())).toEqual({ action: 'drop', reason: 'noisy', rule: 1 });
  });

  it('uses a default reason naming the rule index', () => {
    expect(applyRules([rule({ source: 'x' }, 'drop'), rule({}, 'drop')], event())).toEqual({
      action: 'drop',
      reason: 'rule 1 matched',
      rule: 1,
    });
  });

  it('matches an empty match on every event', () => {
    expect(applyRules([rule({}, 'drop')], event({ eventType: undefined, payload: null })).rule).toBe(0);
  });

  it('matches on eventType', () => {
    const rules = [rule({ eventType: 'push' }, 'drop')];
    expect(applyRules(rules, event({ eventType: 'push' })).action).toBe('drop');
    expect(applyRules(rules, event({ eventType: 'pull_request' })).action).toBe('forward');
    expect(applyRules(rules, event({ eventType: undefined })).action).toBe('forward');
  });

  it('requires every given field to match', () => {
    const rules = [
      rule({ source: 'github', eventType: 'push', path: 'ref', equals: 'refs/heads/main' }, 'drop'),
    ];
    const push = { source: 'github', eventType: 'push', payload: { ref: 'refs/heads/main' } };
    expect(applyRules(rules, push).action).toBe('drop');
    expect(applyRules(rules, { ...push, source: 'gitlab' }).action).toBe('forward');
    expect(applyRules(rules, { ...push, eventType: 'tag' }).action).toBe('forward');
    expect(applyRules(rules, { ...push, payload: { ref: 'refs/heads/dev' } }).action).toBe('forward');
  });

  it('compares a top-level payload path with equals', () => {
    const rules = [rule({ path: 'action', equals: 'closed' }, 'drop')];
    expect(applyRules(rules, event({ payload: { action: 'closed' } })).action).toBe('drop');
    expect(applyRules(rules, event({ payload: { action: 'opened' } })).action).toBe('forward');
  });

  it('follows nested dotted paths, including array indexes', () => {
    const draft = [rule({ path: 'pull_request.draft', equals: true }, 'drop', 'drafts')];
    expect(applyRules(draft, event()).action).toBe('forward');
    expect(applyRules(draft, event({ payload: { pull_request: { draft: true } } }))).toEqual({
      action: 'drop',
      reason: 'drafts',
      rule: 0,
    });

    const label = [rule({ path: 'pull_request.labels.0.name', equals: 'bug' }, 'drop')];
    expect(applyRules(label, event()).action).toBe('drop');
    const number = [rule({ path: 'pull_request.number', equals: 7 }, 'drop')];
    expect(applyRules(number, event()).action).toBe('drop');
  });

  it('compares strictly: a number never equals its string form', () => {
    const rules = [rule({ path: 'pull_request.number', equals: '7' }, 'drop')];
    expect(applyRules(rules, event()).action).toBe('forward');
  });

  it('matches equals: null only on an explicit null', () => {
    const rules = [rule({ path: 'a.b', equals: null }, 'drop')];
    expect(applyRules(rules, event({ payload: { a: { b: null } } })).action).toBe('drop');
    expect(applyRules(rules, event({ payload: { a: {} } })).action).toBe('forward');
  });

  it('does not match when the path runs through a missing or primitive value', () => {
    const rules = [rule({ path: 'a.b.c', equals: 1 }, 'drop')];
    expect(applyRules(rules, event({ payload: { a: 'text' } })).action).toBe('forward');
    expect(applyRules(rules, event({ payload: { a: null } })).action).toBe('forward');
    expect(applyRules(rules, event({ payload: 'not an object' })).action).toBe('forward');
    expect(applyRules(rules, event({ payload: undefined })).action).toBe('forward');
  });
});

describe('TriageRules schema', () => {
  it('accepts valid rules', () => {
    expect(
      TriageRules.safeParse([
        { match: { source: 'github', eventType: 'push' }, action: 'drop', reason: 'noise' },
        { match: { path: 'x.y', equals: 3 }, action: 'forward' },
        { match: {}, action: 'forward' },
      ]).success,
    ).toBe(true);
  });

  it.each([
    ['an unknown rule field', [{ match: {}, action: 'drop', priority: 1 }]],
    ['an unknown match field', [{ match: { sender: 'bot' }, action: 'drop' }]],
    ['an unknown action', [{ match: {}, action: 'notify' }]],
    ['a missing match', [{ action: 'drop' }]],
    ['an object as equals', [{ match: { path: 'a', equals: { b: 1 } }, action: 'drop' }]],
    ['a reason over 200 characters', [{ match: {}, action: 'drop', reason: 'r'.repeat(201) }]],
    ['more than 100 rules', Array.from({ length: 101 }, () => ({ match: {}, action: 'drop' }))],
  ])('rejects %s', (_label, rules) => {
    expect(TriageRules.safeParse(rules).success).toBe(false);
  });
});
