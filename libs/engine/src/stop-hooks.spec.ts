import { checkpoints, turnInput } from './test-support';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { ToolRegistry } from '@switchboard/tools';
import { TurnEngine } from './engine';
import {
  BUILTIN_STOP_HOOKS,
  killSwitchHook,
  tenantSpendHook,
  type LoopState,
  type StopHook,
} from './stop-hooks';
import { DEFAULT_BUDGET, type TurnCheckpoints } from './types';

class Echo implements ModelProvider {
  readonly name = 'fake';
  calls = 0;
  async complete(_r: ModelRequest): Promise<ModelResponse> {
    this.calls++;
    return {
      text: 'hi',
      toolCalls: [],
      usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
      finishReason: 'stop',
    };
  }
}

const recorder = () => {
  const events: { type: string; data: Record<string, unknown> }[] = [];
  const cp: TurnCheckpoints = checkpoints({ emit: async (type, data) => void events.push({ type, data }) });
  return { cp, events };
};

const input = (stopHooks: StopHook[] = []) => turnInput({ tenantId: 'tenant-1', stopHooks });

describe('stop hooks', () => {
  const state = (over: Partial<LoopState>): LoopState => ({
    turnId: 't',
    tenantId: 'x',
    iterations: 0,
    toolCalls: 0,
    spentUsd: 0,
    elapsedMs: 0,
    budget: { ...DEFAULT_BUDGET, maxUsd: 1, deadlineMs: 1000 },
    ...over,
  });
  const votes = async (s: LoopState) =>
    (await Promise.all(BUILTIN_STOP_HOOKS.map(async (h) => h.check(s)))).filter(
      (v): v is string => v !== null,
    );

  it('the built-ins vote only when their budget is spent', async () => {
    expect(await votes(state({}))).toEqual([]);
    expect(await votes(state({ iterations: 10 }))).toEqual(['max_iterations']);
    expect(await votes(state({ toolCalls: 50 }))).toEqual(['max_tool_calls']);
    expect(await votes(state({ spentUsd: 1 }))).toEqual(['max_usd']);
    expect(await votes(state({ elapsedMs: 1000 }))).toEqual(['deadline']);
  });

  it('a custom hook’s vote ends the turn before the provider is called, with its reason and an event', async () => {
    const provider = new Echo();
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: new ToolRegistry([]),
    });
    const seen: LoopState[] = [];
    const hook: StopHook = { name: 'quota', check: (s) => (seen.push(s), 'tenant_quota_exhausted') };
    const { cp, events } = recorder();
    const outcome = await engine.run(input([hook]), cp, new AbortController().signal);
    expect(outcome).toMatchObject({
      status: 'completed',
      stopReason: 'tenant_quota_exhausted',
      iterations: 0,
    });
    expect(provider.calls).toBe(0);
    expect(events).toEqual([
      { type: 'stop_hook_fired', data: { hook: 'quota', reason: 'tenant_quota_exhausted', iteration: 0 } },
    ]);
    expect(seen[0]).toMatchObject({ turnId: 't', tenantId: 'tenant-1', iterations: 0 });
  });

  it('a hook that abstains lets the turn run', async () => {
    const provider = new Echo();
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: new ToolRegistry([]),
    });
    const { cp } = recorder();
    const outcome = await engine.run(
      input([{ name: 'never', check: () => null }]),
      cp,
      new AbortController().signal,
    );
    expect(outcome).toMatchObject({ status: 'completed', stopReason: 'final_answer', finalText: 'hi' });
    expect(provider.calls).toBe(1);
  });

  it('the kill switch’s vote cancels the turn, reason tenant_paused, after the round that ran (docs/adr/0055)', async () => {
    const provider = new Echo();
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: new ToolRegistry([]),
    });
    const { cp, events } = recorder();
    const outcome = await engine.run(
      input([killSwitchHook(async () => true)]),
      cp,
      new AbortController().signal,
    );
    expect(outcome).toMatchObject({
      status: 'cancelled',
      stopReason: 'cancelled',
      cancelReason: 'tenant_paused',
      iterations: 0,
    });
    expect(provider.calls).toBe(0);
    expect(events).toEqual([
      { type: 'stop_hook_fired', data: { hook: 'kill_switch', reason: 'kill_switch', iteration: 0 } },
    ]);
    // A turn's own limits complete it: only a hook that says so cancels.
    expect(BUILTIN_STOP_HOOKS.every((h) => h.cancels === undefined)).toBe(true);
  });

  it('the kill switch asks about the turn’s tenant', async () => {
    const asked: string[] = [];
    const hook = killSwitchHook(async (tenantId) => (asked.push(tenantId), tenantId === 'killed'));
    expect(await hook.check(state({ tenantId: 'killed' }))).toBe('kill_switch');
    expect(await hook.check(state({ tenantId: 'alive' }))).toBeNull();
    expect(asked).toEqual(['killed', 'alive']);
  });

  it('the tenant cap stops at what is left of the day, and never without a cap (docs/adr/0026)', () => {
    let cap: number | undefined = 0.5;
    const hook = tenantSpendHook(() => cap);
    expect(hook.check(state({ spentUsd: 0.49 }))).toBeNull();
    expect(hook.check(state({ spentUsd: 0.5 }))).toBe('tenant_budget_exhausted');
    cap = 0;
    expect(hook.check(state({ spentUsd: 0 }))).toBe('tenant_budget_exhausted');
    cap = undefined;
    expect(hook.check(state({ spentUsd: 1000 }))).toBeNull();
  });
});
