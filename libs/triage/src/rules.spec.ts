import { applyRules, TriageRule, TriageRules, valueAt, type TriggerEvent } from './rules';

const event = (overrides: Partial<TriggerEvent> = {}): TriggerEvent => ({
  source: 'github',
  eventType: 'pull_request',
  payload: { action: 'opened', pull_request: { draft: false, number: 7, labels: [{ name: 'bug' }] } },
  ...overrides,
});

const rule = (match: TriageRule['match'], action: string, reason?: string): TriageRule =>
  TriageRule.parse({ match, action, ...(reason ? { reason } : {}) });

const act = (rules: TriageRule[], e: TriggerEvent) => applyRules(rules, e)?.action ?? null;

describe('applyRules', () => {
  it('decides nothing when no rule matches (the model decides then)', () => {
    expect(applyRules([], event())).toBeNull();
    expect(applyRules([rule({ source: 'stripe' }, 'drop')], event())).toBeNull();
  });

  it('lets the first matching rule decide', () => {
    const rules = [
      rule({ source: 'stripe' }, 'notify', 'payments'),
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
    expect(applyRules([rule({}, 'drop')], event({ eventType: undefined, payload: null }))?.rule).toBe(0);
  });

  it('matches on eventType', () => {
    const rules = [rule({ eventType: 'push' }, 'drop')];
    expect(act(rules, event({ eventType: 'push' }))).toBe('drop');
    expect(act(rules, event({ eventType: 'pull_request' }))).toBeNull();
    expect(act(rules, event({ eventType: undefined }))).toBeNull();
  });

  it('requires every given field to match', () => {
    const rules = [
      rule({ source: 'github', eventType: 'push', path: 'ref', equals: 'refs/heads/main' }, 'drop'),
    ];
    const push = { source: 'github', eventType: 'push', payload: { ref: 'refs/heads/main' } };
    expect(act(rules, push)).toBe('drop');
    expect(act(rules, { ...push, source: 'gitlab' })).toBeNull();
    expect(act(rules, { ...push, eventType: 'tag' })).toBeNull();
    expect(act(rules, { ...push, payload: { ref: 'refs/heads/dev' } })).toBeNull();
  });

  it('compares a top-level payload path with equals', () => {
    const rules = [rule({ path: 'action', equals: 'closed' }, 'drop')];
    expect(act(rules, event({ payload: { action: 'closed' } }))).toBe('drop');
    expect(act(rules, event({ payload: { action: 'opened' } }))).toBeNull();
  });

  it('follows nested dotted paths, including array indexes', () => {
    const draft = [rule({ path: 'pull_request.draft', equals: true }, 'drop', 'drafts')];
    expect(act(draft, event())).toBeNull();
    expect(applyRules(draft, event({ payload: { pull_request: { draft: true } } }))).toEqual({
      action: 'drop',
      reason: 'drafts',
      rule: 0,
    });

    const label = [rule({ path: 'pull_request.labels.0.name', equals: 'bug' }, 'drop')];
    expect(act(label, event())).toBe('drop');
    const number = [rule({ path: 'pull_request.number', equals: 7 }, 'drop')];
    expect(act(number, event())).toBe('drop');
  });

  it('compares strictly: a number never equals its string form', () => {
    const rules = [rule({ path: 'pull_request.number', equals: '7' }, 'drop')];
    expect(act(rules, event())).toBeNull();
  });

  it('matches equals: null only on an explicit null', () => {
    const rules = [rule({ path: 'a.b', equals: null }, 'drop')];
    expect(act(rules, event({ payload: { a: { b: null } } }))).toBe('drop');
    expect(act(rules, event({ payload: { a: {} } }))).toBeNull();
  });

  it('does not match when the path runs through a missing or primitive value', () => {
    const rules = [rule({ path: 'a.b.c', equals: 1 }, 'drop')];
    expect(act(rules, event({ payload: { a: 'text' } }))).toBeNull();
    expect(act(rules, event({ payload: { a: null } }))).toBeNull();
    expect(act(rules, event({ payload: 'not an object' }))).toBeNull();
    expect(act(rules, event({ payload: undefined }))).toBeNull();
  });
});

describe('TriageRules schema', () => {
  it('accepts valid rules', () => {
    expect(
      TriageRules.safeParse([
        { match: { source: 'github', eventType: 'push' }, action: 'drop', reason: 'noise' },
        { match: { path: 'x.y', equals: 3 }, action: 'forward' },
        { match: {}, action: 'forward' },
        {
          match: { eventTypes: ['issues'], where: [{ path: '$.issue.labels[0].name', in: ['p0'] }] },
          action: 'notify',
        },
      ]).success,
    ).toBe(true);
  });

  it('reads the pre-pipeline action forward as spawn_orchestrator', () => {
    expect(TriageRule.parse({ match: {}, action: 'forward' }).action).toBe('spawn_orchestrator');
  });

  it.each([
    ['an unknown rule field', [{ match: {}, action: 'drop', priority: 1 }]],
    ['an unknown match field', [{ match: { sender: 'bot' }, action: 'drop' }]],
    ['an unknown action', [{ match: {}, action: 'escalate' }]],
    ['path without equals', [{ match: { path: 'a' }, action: 'drop' }]],
    ['a path with a wildcard', [{ match: { path: 'a.*' }, action: 'drop' }]],
    [
      'a filter with two tests',
      [{ match: { where: [{ path: 'a', equals: 1, exists: true }] }, action: 'drop' }],
    ],
    ['a filter with no test', [{ match: { where: [{ path: 'a' }] }, action: 'drop' }]],
    ['an empty in list', [{ match: { where: [{ path: 'a', in: [] }] }, action: 'drop' }]],
    ['a missing match', [{ action: 'drop' }]],
    ['an object as equals', [{ match: { path: 'a', equals: { b: 1 } }, action: 'drop' }]],
    ['a reason over 200 characters', [{ match: {}, action: 'drop', reason: 'r'.repeat(201) }]],
    ['more than 100 rules', Array.from({ length: 101 }, () => ({ match: {}, action: 'drop' }))],
  ])('rejects %s', (_label, rules) => {
    expect(TriageRules.safeParse(rules).success).toBe(false);
  });
});

describe('JSON-path filters', () => {
  const issue = {
    source: 'github',
    eventType: 'issues',
    payload: { action: 'opened', issue: { labels: [{ name: 'p0' }, { name: 'bug' }], assignee: null } },
  };

  it('matches any of eventTypes', () => {
    const rules = [rule({ eventTypes: ['issues', 'issue_comment'] }, 'notify')];
    expect(act(rules, issue)).toBe('notify');
    expect(act(rules, { ...issue, eventType: 'push' })).toBeNull();
    expect(act(rules, { ...issue, eventType: undefined })).toBeNull();
  });

  it('reads bracket indices and a leading $.', () => {
    expect(valueAt(issue.payload, '$.issue.labels[1].name')).toBe('bug');
    expect(valueAt(issue.payload, 'issue.labels.1.name')).toBe('bug');
    expect(valueAt(issue.payload, 'issue.labels[2].name')).toBeUndefined();
  });

  it('does not read inherited properties', () => {
    expect(valueAt({}, 'constructor')).toBeUndefined();
  });

  it('needs every filter to hold: equals, in, exists', () => {
    const rules = [
      rule(
        {
          where: [
            { path: 'action', in: ['opened', 'reopened'] },
            { path: 'issue.labels[0].name', equals: 'p0' },
            { path: 'issue.assignee', exists: true },
            { path: 'issue.milestone', exists: false },
          ],
        },
        'spawn_reactor',
        'urgent and unassigned',
      ),
    ];
    expect(applyRules(rules, issue)).toEqual({
      action: 'spawn_reactor',
      reason: 'urgent and unassigned',
      rule: 0,
    });
    expect(act(rules, { ...issue, payload: { ...issue.payload, action: 'closed' } })).toBeNull();
    expect(
      act(rules, { ...issue, payload: { action: 'opened', issue: { labels: [], assignee: null } } }),
    ).toBeNull();
    expect(
      act(rules, {
        ...issue,
        payload: { ...issue.payload, issue: { ...issue.payload.issue, milestone: 1 } },
      }),
    ).toBeNull();
  });
});
