import { DEFAULT_BUDGET } from '@switchboard/engine';
import type { TranscriptEntry, TurnLoad } from '@switchboard/store';
import { DEFAULT_APPROVAL_TTL_MS, planTurn, type TurnPlanOptions } from './turn-plan';

const entry = (e: Partial<TranscriptEntry> & { text: string }): TranscriptEntry => ({
  role: 'user',
  kind: 'user_message',
  trust: 'trusted_user',
  authorityClass: 'user_instruction',
  body: { type: 'text', text: e.text },
  toolCalls: null,
  toolCallId: null,
  metadata: null,
  turnSeq: 1,
  position: 0,
  ...e,
});

type LoadOverrides = Omit<Partial<TurnLoad>, 'turn' | 'session' | 'agent' | 'tenant'> & {
  turn?: Partial<TurnLoad['turn']>;
  session?: Partial<TurnLoad['session']>;
  agent?: Partial<TurnLoad['agent']>;
  tenant?: Partial<TurnLoad['tenant']>;
};

function load(over: LoadOverrides = {}): TurnLoad {
  const { turn, session, agent, tenant, ...rest } = over;
  return {
    resumed: false,
    startedCalls: [],
    decisions: [],
    waitedMs: 0,
    earlier: [],
    own: [entry({ text: 'hello', turnSeq: 3 })],
    ...rest,
    turn: {
      id: 'turn-1',
      tenantId: 'tenant-1',
      sessionId: 'session-1',
      agentId: 'agent-1',
      seq: 3,
      inputMessageId: 'message-1',
      status: 'running',
      priority: 'normal',
      model: null,
      iterations: 0,
      toolCallCount: 0,
      costUsd: '0.00000000',
      traceContext: null,
      runCount: 1,
      createdAt: new Date(0),
      startedAt: new Date(1_000_000),
      cancelRequested: false,
      cancelReason: null,
      taskId: null,
      childrenCostUsd: '0',
      ...turn,
    },
    session: { systemPrompt: null, summarizerFailures: 0, compaction: null, ...session },
    agent: {
      id: 'agent-1',
      name: 'helper',
      instructions: 'Be brief.',
      model: 'scripted/a',
      fallbackModels: [],
      tools: [],
      approvalRequired: [],
      budgets: {},
      ...agent,
    },
    tenant: { settings: {}, killSwitch: false, ...tenant },
  };
}

const options: TurnPlanOptions = {
  defaultModel: 'scripted/default',
  offered: [],
  registered: ['word_count', 'current_time', 'http_fetch'],
  now: 5_000_000,
};

describe('planTurn (a claim as the engine input)', () => {
  it('resolves the model and fallbacks by hint: the tenant route, else the deployment default', () => {
    const agent = { model: 'hint:coding', fallbackModels: ['hint:chat', 'scripted/b'] };
    const routed = planTurn(
      load({
        agent,
        tenant: { settings: { modelRoutes: { coding: 'openai/gpt-4.1', summarization: 'scripted/s' } } },
      }),
      options,
    );
    expect(routed.input.model).toBe('openai/gpt-4.1');
    expect(routed.input.fallbackModels).toEqual(['scripted/default', 'scripted/b']);
    expect(routed.input.summarizer).toEqual({ model: 'scripted/s', consecutiveFailures: 0 });

    const plain = planTurn(load({ agent, session: { summarizerFailures: 2 } }), options);
    expect(plain.input.model).toBe('scripted/default');
    expect(plain.input.summarizer).toEqual({ model: 'scripted/default', consecutiveFailures: 2 });
    expect(plain.input.contextWindowTokens).toBe(128_000);
    expect(
      planTurn(load(), { ...options, contextWindows: { 'scripted/a': 9000 } }).input.contextWindowTokens,
    ).toBe(9000);
  });

  it('renders the system prompt on the first turn (to be stored) and reuses a stored one byte for byte', () => {
    const agent = { tools: ['word_count', 'shop__buy'] };
    const first = planTurn(load({ agent }), { ...options, offered: ['word_count', 'shop__buy'] });
    expect(first.input.systemPrompt).toContain('Be brief.');
    expect(first.input.systemPrompt).toContain('Tools available to you: word_count, shop__buy.');
    expect(first.newSystemPrompt).toBe(first.input.systemPrompt);
    expect(first.input.tools).toEqual(['word_count', 'shop__buy']);

    const later = planTurn(load({ agent, session: { systemPrompt: 'stored prompt' } }), options);
    expect(later.input.systemPrompt).toBe('stored prompt');
    expect(later.newSystemPrompt).toBeUndefined();
  });

  it('caps the budget: the agent over the defaults, a triage reactor lowers rounds, a parent share lowers maxUsd', () => {
    expect(planTurn(load(), options).input.budget).toEqual(DEFAULT_BUDGET);
    const own = [
      entry({ text: 'event', kind: 'webhook_event', metadata: { triage: { maxIterations: 2 } } }),
      entry({ text: 'task', metadata: { subagent: { maxUsd: 0.25 } }, position: 1 }),
    ];
    const plan = planTurn(load({ own, agent: { budgets: { maxIterations: 6, maxUsd: 1 } } }), options);
    expect(plan.input.budget).toEqual({ ...DEFAULT_BUDGET, maxIterations: 2, maxUsd: 0.25 });
    expect(plan.nextPosition).toBe(2);
  });

  it('gives the approval inputs: the agent and tenant lists, and untrusted input from a user message only', () => {
    const settings = { approvalRequired: ['http_fetch'] };
    const trusted = planTurn(
      load({ agent: { approvalRequired: ['word_count'] }, tenant: { settings } }),
      options,
    );
    expect(trusted.input.approval).toEqual({
      agent: ['word_count'],
      tenant: ['http_fetch'],
      untrustedInput: false,
    });

    const webhook = [entry({ text: 'payload', authorityClass: 'integration_signal' })];
    expect(planTurn(load({ own: webhook }), options).input.approval?.untrustedInput).toBe(true);
    const toolOutput = [
      entry({ text: 'ok' }),
      entry({ text: 'out', role: 'tool', authorityClass: 'external_evidence' }),
    ];
    expect(planTurn(load({ own: toolOutput }), options).input.approval?.untrustedInput).toBe(false);
  });

  it('takes the approval wait from the tenant, then the deployment, then 24 h', () => {
    expect(planTurn(load(), options).approvalTtlMs).toBe(DEFAULT_APPROVAL_TTL_MS);
    expect(planTurn(load(), { ...options, approvalTtlMs: 60_000 }).approvalTtlMs).toBe(60_000);
    const tenant = { settings: { approvalTtlMs: 5_000 } };
    expect(planTurn(load({ tenant }), { ...options, approvalTtlMs: 60_000 }).approvalTtlMs).toBe(5_000);
  });

  it("lays the tenant's prices over the deployment's", () => {
    const deployment = { 'scripted/a': { input: 1, output: 2 }, 'scripted/b': { input: 3, output: 4 } };
    const tenant = { settings: { modelPrices: { 'scripted/a': { input: 9, output: 9 } } } };
    expect(planTurn(load({ tenant }), { ...options, prices: deployment }).input.prices).toEqual({
      'scripted/a': { input: 9, output: 9 },
      'scripted/b': { input: 3, output: 4 },
    });
  });

  it('starts the deadline at the first run plus the time it waited, and counts the children in spentUsd', () => {
    const plan = planTurn(
      load({ turn: { costUsd: '0.50000000', childrenCostUsd: '0.25' }, waitedMs: 7_000 }),
      options,
    );
    expect(plan.input.startedAt).toBe(1_000_000 + 7_000);
    expect(plan.input.spentUsd).toBe(0.75);
    expect(planTurn(load({ turn: { startedAt: null } }), options).input.startedAt).toBe(options.now);
  });

  it('puts the compaction note where the middle was; the seqs place a later cut', () => {
    const earlier = [
      entry({ text: 'first', turnSeq: 1 }),
      entry({ text: 'first answer', role: 'assistant', turnSeq: 1, position: 1 }),
      entry({ text: 'kept', turnSeq: 5 }),
      entry({ text: 'kept answer', role: 'assistant', turnSeq: 5, position: 1 }),
    ];
    const compaction = { headThroughSeq: 1, keepFromSeq: 5, droppedMessages: 6, summary: 'the middle' };
    const plan = planTurn(load({ earlier, session: { compaction } }), options);
    expect(plan.input.history.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(plan.input.history[2].content).toContain('<summary>\nthe middle\n</summary>');
    expect(plan.historySeqs).toEqual([1, 1, 4, 4, 5, 5]);
  });

  it("runs a session's overrides over the agent: the model without its fallbacks, the instructions in the prompt", () => {
    const agent = { model: 'hint:chat', fallbackModels: ['scripted/b'] };
    const tenant = { settings: { modelRoutes: { chat: 'scripted/routed', reasoning: 'scripted/deep' } } };
    const plain = planTurn(load({ agent, tenant }), options);
    expect([plain.input.model, plain.input.fallbackModels]).toEqual(['scripted/routed', ['scripted/b']]);

    // A model override (a fork's, docs/adr/0053) replaces the model and its fallbacks; a hint resolves by route.
    const model = planTurn(
      load({ agent, tenant, session: { overrides: { model: 'hint:reasoning' } } }),
      options,
    );
    expect([model.input.model, model.input.fallbackModels]).toEqual(['scripted/deep', []]);
    expect(model.newSystemPrompt).toContain('Be brief.');

    // Instructions: the prompt rendered on the session's first turn carries them instead of the agent's.
    const instructions = planTurn(
      load({ session: { overrides: { instructions: 'Answer in haiku.' } } }),
      options,
    );
    expect(instructions.newSystemPrompt).toContain('Answer in haiku.');
    expect(instructions.newSystemPrompt).not.toContain('Be brief.');
    expect(instructions.input.model).toBe('scripted/a');
    // A stored prompt is still reused byte for byte (a fork with new instructions has none stored).
    const stored = planTurn(
      load({ session: { systemPrompt: 'stored', overrides: { instructions: 'Answer in haiku.' } } }),
      options,
    );
    expect(stored.input.systemPrompt).toBe('stored');

    // A stored value that no longer parses overrides nothing.
    const bad = planTurn(load({ session: { overrides: { model: 'not a model', extra: 1 } } }), options);
    expect(bad.input.model).toBe('scripted/a');
  });
});

describe('planTurn: vision route, runtime metadata, learning (docs/adr/0059)', () => {
  const picture = entry({
    text: 'what is this?',
    turnSeq: 3,
    body: { type: 'text', text: 'what is this?', images: [{ url: 'https://example.com/a.png' }] },
  });
  const routes = {
    settings: { modelRoutes: { vision: 'openai-chat/gpt-4o', chat: 'openai-chat/gpt-4o-mini' } },
  };

  it('runs a turn with image input on the vision route, keeping only fallbacks that take images', () => {
    const plan = planTurn(
      load({
        own: [picture],
        tenant: routes,
        agent: { model: 'openai-chat/gpt-3.5-turbo', fallbackModels: ['hint:chat', 'openai/gpt-3.5-turbo'] },
      }),
      options,
    );
    expect(plan.input.model).toBe('openai-chat/gpt-4o');
    expect(plan.input.fallbackModels).toEqual(['openai-chat/gpt-4o-mini']);
    expect(plan.input.runtimeMetadata).toEqual({
      provider: 'openai-chat',
      model: 'gpt-4o',
      date: '1970-01-01',
    });
  });

  it("keeps the agent's model for a text turn, and names it in the runtime metadata", () => {
    const plan = planTurn(load({ tenant: routes, agent: { model: 'hint:chat' } }), {
      ...options,
      now: Date.UTC(2026, 11, 10, 12),
    });
    expect(plan.input.model).toBe('openai-chat/gpt-4o-mini');
    expect(plan.input.runtimeMetadata).toEqual({
      provider: 'openai-chat',
      model: 'gpt-4o-mini',
      date: '2026-12-10',
    });
    expect(plan.input.learning).toBeUndefined();
  });

  it("renders the agent's learning when the claim read it", () => {
    const plan = planTurn(
      load({
        agent: {
          learning: {
            reflections: ['The date tool was slow; answer from the metadata.'],
            toolHints: [
              {
                tool: 'http_fetch',
                calls: 4,
                failures: 3,
                failuresByKind: { timeout: 2, http_error: 1 },
                lastFailureKind: 'timeout',
              },
            ],
            userProfile: '- Prefers metric units.',
          },
        },
      }),
      options,
    );
    expect(plan.input.learning).toBe(
      [
        'Your own reflections from earlier turns, newest first:',
        '- The date tool was slow; answer from the metadata.',
        'Tools whose calls often failed for you (from your tool statistics):',
        '- http_fetch: 3 of 4 calls failed (timeout ×2, http_error ×1; last: timeout)',
        "Your user's profile (from the preferences you were told):",
        '- Prefers metric units.',
      ].join('\n'),
    );
  });
});
