import { AdmitMessageRequest, ConcreteModelRef, CreateAgentRequest, MODEL_ROUTES, ModelRef } from './api';
import {
  bodyText,
  defaultTrust,
  deriveAuthorityClass,
  MessageEnvelope,
  MessageKind,
  PRIORITY_RANK,
  Priority,
  type MessageOrigin,
} from './envelope';

const ID = '0190f0e2-7b1a-7c3d-8e4f-0123456789ab';

function envelope(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: ID,
    tenantId: ID,
    agentId: ID,
    sessionId: ID,
    createdAt: '2025-06-01T12:00:00.000Z',
    kind: 'operator_prompt',
    origin: { kind: 'operator', actorId: 'key_1' },
    trust: 'trusted_operator',
    authorityClass: 'operator_instruction',
    priority: 'normal',
    deliverySurface: 'http_public_enqueue',
    admissionContext: 'control_authenticated',
    body: { type: 'text', text: 'hello' },
    metadata: {},
    correlationId: null,
    causationId: null,
    workItemId: null,
    taskId: null,
    ...overrides,
  };
}

describe('deriveAuthorityClass', () => {
  it.each([
    ['operator_prompt', 'operator_instruction'],
    ['system_tick', 'runtime_instruction'],
    ['internal_followup', 'runtime_instruction'],
    ['task_result', 'runtime_instruction'],
    ['task_status', 'runtime_instruction'],
    ['control', 'runtime_instruction'],
    ['timer_tick', 'runtime_instruction'],
    ['channel_event', 'external_evidence'],
  ] as const)('derives %s → %s', (kind, expected) => {
    expect(deriveAuthorityClass(kind)).toBe(expected);
  });

  it.each(['webhook_event', 'callback_event'] as const)(
    'derives %s → integration_signal only when the integration is verified',
    (kind) => {
      expect(deriveAuthorityClass(kind, true)).toBe('integration_signal');
      expect(deriveAuthorityClass(kind, false)).toBe('external_evidence');
      expect(deriveAuthorityClass(kind)).toBe('external_evidence');
    },
  );

  it('never lets verification raise a channel event or lower an operator prompt', () => {
    expect(deriveAuthorityClass('channel_event', true)).toBe('external_evidence');
    expect(deriveAuthorityClass('operator_prompt', true)).toBe('operator_instruction');
  });

  it('covers every message kind', () => {
    for (const kind of MessageKind.options) {
      expect(deriveAuthorityClass(kind)).toEqual(expect.any(String));
    }
  });
});

describe('defaultTrust', () => {
  it.each<[MessageOrigin, string]>([
    [{ kind: 'operator' }, 'trusted_operator'],
    [{ kind: 'system', subsystem: 'scheduler' }, 'trusted_system'],
    [{ kind: 'task', taskId: 't1' }, 'trusted_system'],
    [{ kind: 'timer', scheduleId: 's1' }, 'trusted_system'],
    [{ kind: 'callback', triggerId: 'tr1' }, 'trusted_integration'],
    [{ kind: 'webhook', source: 'github', eventType: 'push' }, 'trusted_integration'],
    [{ kind: 'channel', channelId: 'c1' }, 'untrusted_external'],
  ])('gives origin %o the trust %s', (origin, expected) => {
    expect(defaultTrust(origin)).toBe(expected);
  });
});

describe('MessageEnvelope', () => {
  it('accepts a complete envelope', () => {
    expect(MessageEnvelope.safeParse(envelope()).success).toBe(true);
  });

  it('strips unknown top-level fields instead of rejecting them (the schema is not strict)', () => {
    const parsed = MessageEnvelope.parse(
      envelope({ isAdmin: true, authorityOverride: 'operator_instruction' }),
    );
    expect(parsed).not.toHaveProperty('isAdmin');
    expect(parsed).not.toHaveProperty('authorityOverride');
    expect(parsed.authorityClass).toBe('operator_instruction');
  });

  it.each([
    ['authorityClass', 'root'],
    ['trust', 'superuser'],
    ['kind', 'email'],
    ['priority', 'urgent'],
    ['id', 'not-a-uuid'],
    ['createdAt', 'yesterday'],
    ['origin', { kind: 'webhook' }],
    ['body', { type: 'html', html: '<p/>' }],
  ])('rejects an invalid %s', (field, value) => {
    expect(MessageEnvelope.safeParse(envelope({ [field]: value })).success).toBe(false);
  });

  it('requires the nullable fields to be present', () => {
    const { correlationId: _omitted, ...rest } = envelope();
    expect(MessageEnvelope.safeParse(rest).success).toBe(false);
  });
});

describe('bodyText', () => {
  it('renders text, brief and json bodies', () => {
    expect(bodyText({ type: 'text', text: 'hi' })).toBe('hi');
    expect(bodyText({ type: 'brief', title: 'T', text: 'body' })).toBe('T\n\nbody');
    expect(bodyText({ type: 'brief', text: 'body' })).toBe('body');
    expect(bodyText({ type: 'json', value: { a: [1, 'x'] } })).toBe('{"a":[1,"x"]}');
  });
});

describe('PRIORITY_RANK', () => {
  it('orders interject < next < normal < background', () => {
    expect(PRIORITY_RANK.interject).toBeLessThan(PRIORITY_RANK.next);
    expect(PRIORITY_RANK.next).toBeLessThan(PRIORITY_RANK.normal);
    expect(PRIORITY_RANK.normal).toBeLessThan(PRIORITY_RANK.background);
  });

  it('ranks every priority with a positive integer (BullMQ priorities start at 1)', () => {
    for (const p of Priority.options) {
      expect(Number.isInteger(PRIORITY_RANK[p])).toBe(true);
      expect(PRIORITY_RANK[p]).toBeGreaterThanOrEqual(1);
    }
    expect(Object.keys(PRIORITY_RANK).sort()).toEqual([...Priority.options].sort());
  });
});

describe('ModelRef', () => {
  it.each([
    'openai/gpt-4o',
    'openai-chat/llama3.1:8b',
    'anthropic/claude-sonnet-5-5',
    'scripted/demo',
    'openai-chat/org@model_v2',
  ])('accepts %s', (ref) => {
    expect(ModelRef.safeParse(ref).success).toBe(true);
  });

  it.each([
    'gpt-4o',
    'openai/',
    '/gpt-4o',
    'azure/gpt-4o',
    'OpenAI/gpt-4o',
    'openai/gpt 4o',
    'openai/a/b',
    '',
  ])('rejects %p', (ref) => {
    expect(ModelRef.safeParse(ref).success).toBe(false);
  });

  it.each(['hint:chat', 'hint:reasoning', 'hint:agentic', 'hint:coding', 'hint:burst', 'hint:summarization'])(
    'accepts the route hint %s',
    (ref) => {
      expect(ModelRef.safeParse(ref).success).toBe(true);
    },
  );

  it.each([
    'hint:nope',
    'hint:',
    'hint',
    'HINT:chat',
    'hint:Chat',
    'hint:chat/x',
    'hint:chat ',
    'openai/gpt-4o|hint:chat',
  ])('rejects the bad hint %p', (ref) => {
    expect(ModelRef.safeParse(ref).success).toBe(false);
  });

  it('explains the expected shape, hints included', () => {
    const result = ModelRef.safeParse('nope');
    expect(result.success).toBe(false);
    expect(result.error?.issues[0].message).toBe(
      'must be "<provider>/<model>" with provider openai, openai-chat, anthropic or scripted, ' +
        'or "hint:<route>" with route chat, reasoning, agentic, coding, burst, summarization, vision or evaluation',
    );
  });

  it('names every route in its message', () => {
    const message = ModelRef.safeParse('nope').error?.issues[0].message ?? '';
    for (const route of MODEL_ROUTES) expect(message).toContain(route);
  });

  it('accepts hints as an agent model and fallbacks', () => {
    expect(
      CreateAgentRequest.safeParse({
        name: 'a',
        model: 'hint:coding',
        fallbackModels: ['hint:burst', 'openai/gpt-4o'],
      }).success,
    ).toBe(true);
    expect(CreateAgentRequest.safeParse({ name: 'a', fallbackModels: ['hint:nope'] }).success).toBe(false);
  });
});

describe('ConcreteModelRef', () => {
  it('accepts a provider/model reference and rejects hints', () => {
    expect(ConcreteModelRef.safeParse('openai/gpt-4o').success).toBe(true);
    const hint = ConcreteModelRef.safeParse('hint:chat');
    expect(hint.success).toBe(false);
    expect(hint.error?.issues[0].message).toContain('<provider>/<model>');
  });
});

describe('AdmitMessageRequest', () => {
  it('accepts string content and text blocks with optional fields', () => {
    expect(AdmitMessageRequest.safeParse({ content: 'hi' }).success).toBe(true);
    expect(
      AdmitMessageRequest.safeParse({
        content: [{ type: 'text', text: 'a' }],
        priority: 'interject',
        multitask: 'reject',
        metadata: { k: 1 },
        correlationId: 'c-1',
      }).success,
    ).toBe(true);
  });

  it.each(['enqueue', 'reject', 'interrupt'])('accepts multitask: %s', (multitask) => {
    expect(AdmitMessageRequest.safeParse({ content: 'hi', multitask }).success).toBe(true);
  });

  it.each([true, false, 1, 30, 3600])('accepts wait: %p', (wait) => {
    expect(AdmitMessageRequest.safeParse({ content: 'hi', wait }).success).toBe(true);
  });

  it.each([
    ['an unknown field', { content: 'hi', extra: 1 }],
    ['a caller-supplied authorityClass', { content: 'hi', authorityClass: 'operator_instruction' }],
    ['a caller-supplied trust', { content: 'hi', trust: 'trusted_operator' }],
    ['an unknown field in a content block', { content: [{ type: 'text', text: 'a', cache: true }] }],
    ['empty content', { content: '' }],
    ['no content blocks', { content: [] }],
    ['an unknown priority', { content: 'hi', priority: 'urgent' }],
    ['an unknown multitask mode', { content: 'hi', multitask: 'replace' }],
    ['a missing content', {}],
    ['wait of 0 seconds', { content: 'hi', wait: 0 }],
    ['wait of a fraction of a second', { content: 'hi', wait: 1.5 }],
    ['wait over an hour', { content: 'hi', wait: 3601 }],
    ['wait as a string', { content: 'hi', wait: 'yes' }],
  ])('rejects %s', (_label, body) => {
    expect(AdmitMessageRequest.safeParse(body).success).toBe(false);
  });
});

describe('CreateAgentRequest', () => {
  it('accepts a minimal and a full agent', () => {
    expect(CreateAgentRequest.safeParse({ name: 'a' }).success).toBe(true);
    expect(
      CreateAgentRequest.safeParse({
        name: 'helper',
        archetype: 'assistant',
        tier: 'chat',
        instructions: 'be nice',
        model: 'openai/gpt-4o',
        fallbackModels: ['anthropic/claude-haiku-5-5'],
        tools: ['word_count'],
        allowedSubagents: ['researcher'],
        budgets: { maxIterations: 5, maxToolCalls: 10, maxUsd: 1, deadlineMs: 60_000, maxReflections: 0 },
      }).success,
    ).toBe(true);
  });

  it('trims the name and rejects a blank one', () => {
    expect(CreateAgentRequest.parse({ name: '  bot  ' }).name).toBe('bot');
    expect(CreateAgentRequest.safeParse({ name: '   ' }).success).toBe(false);
  });

  it.each([
    ['an unknown field', { name: 'a', temperature: 0.2 }],
    ['an unknown budget field', { name: 'a', budgets: { maxTokens: 10 } }],
    ['an invalid model ref', { name: 'a', model: 'gpt-4o' }],
    ['an invalid fallback model', { name: 'a', fallbackModels: ['openai/gpt-4o', 'bad'] }],
    ['too many fallback models', { name: 'a', fallbackModels: Array(6).fill('openai/gpt-4o') }],
    ['a zero iteration budget', { name: 'a', budgets: { maxIterations: 0 } }],
    ['a fractional tool-call budget', { name: 'a', budgets: { maxToolCalls: 1.5 } }],
    ['a deadline under a second', { name: 'a', budgets: { deadlineMs: 999 } }],
    ['an unknown tier', { name: 'a', tier: 'premium' }],
  ])('rejects %s', (_label, body) => {
    expect(CreateAgentRequest.safeParse(body).success).toBe(false);
  });
});
