import { z } from 'zod';
import {
  ProviderError,
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { defineTool, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { checkpoints, turnInput } from './test-support';
import { DEFAULT_BUDGET, type ToolOutcome } from './types';

/** The wall-clock deadline bounds what is in flight, not only the gaps between iterations. */
const USAGE = { inputTokens: 1, outputTokens: 1, cachedTokens: 0 };

/** Answers with the scripted responses; `'hang'` waits until the request is aborted. */
class Model implements ModelProvider {
  readonly name = 'fake';
  constructor(private readonly steps: (ModelResponse | 'hang')[]) {}
  complete(request: ModelRequest): Promise<ModelResponse> {
    const step = this.steps.shift() ?? 'hang';
    if (step !== 'hang') return Promise.resolve(step);
    return new Promise((_, reject) => {
      const abort = () => reject(new ProviderError('cancelled', 'request aborted'));
      if (request.signal?.aborted) abort();
      request.signal?.addEventListener('abort', abort, { once: true });
    });
  }
}

const slowTool = defineTool({
  name: 'slow',
  description: 'never finishes on its own',
  schema: z.strictObject({}),
  sideEffect: 'read_only',
  timeoutMs: 60_000,
  needsApproval: false,
  execute: (_args, ctx) =>
    new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('stopped')))),
}) as ToolDefinition;

function setup(steps: (ModelResponse | 'hang')[]) {
  const engine = new TurnEngine({
    providers: new ProviderRegistry({}, [new Model(steps)]),
    tools: new ToolRegistry([slowTool]),
  });
  const events: { type: string; data: Record<string, unknown> }[] = [];
  const results: ToolOutcome[] = [];
  const cp = checkpoints({
    emit: async (type, data) => void events.push({ type, data }),
    recordToolResult: async (_m, outcome) => void results.push(outcome),
  });
  return { engine, cp, events, results };
}

describe('the turn deadline', () => {
  it('cuts off a hung model call and ends the turn with the deadline as its stop reason', async () => {
    const h = setup(['hang']);
    const started = Date.now();
    const outcome = await h.engine.run(
      turnInput({ model: 'fake/m', budget: { ...DEFAULT_BUDGET, deadlineMs: 50 } }),
      h.cp,
      new AbortController().signal,
    );
    expect(outcome).toMatchObject({ status: 'completed', stopReason: 'deadline' });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(h.events.at(-1)).toEqual({
      type: 'stop_hook_fired',
      data: { hook: 'deadline', reason: 'deadline', iteration: 0 },
    });
  });

  it('cuts off a running tool, which still gets its one result', async () => {
    const h = setup([
      {
        text: '',
        toolCalls: [{ id: 'c1', name: 'slow', arguments: '{}' }],
        usage: USAGE,
        finishReason: 'tool_calls',
      },
    ]);
    const outcome = await h.engine.run(
      turnInput({ model: 'fake/m', tools: ['slow'], budget: { ...DEFAULT_BUDGET, deadlineMs: 50 } }),
      h.cp,
      new AbortController().signal,
    );
    expect(outcome).toMatchObject({ status: 'completed', stopReason: 'deadline', toolCalls: 1 });
    // The tool saw the abort and stopped; its answer is the stop's, not the tool's own error.
    expect(h.results).toEqual([expect.objectContaining({ ok: false, kind: 'cancelled', retryable: true })]);
  });

  it('counts from when the turn first started, across a resume', async () => {
    const h = setup(['hang']);
    const outcome = await h.engine.run(
      turnInput({
        model: 'fake/m',
        budget: { ...DEFAULT_BUDGET, deadlineMs: 60_000 },
        startedAt: Date.now() - 60_000,
      }),
      h.cp,
      new AbortController().signal,
    );
    expect(outcome).toMatchObject({ status: 'completed', stopReason: 'deadline' });
  });

  it('a cancel from outside is still a cancel', async () => {
    const h = setup(['hang']);
    const controller = new AbortController();
    const running = h.engine.run(
      turnInput({ model: 'fake/m', budget: { ...DEFAULT_BUDGET, deadlineMs: 60_000 } }),
      h.cp,
      controller.signal,
    );
    setImmediate(() => controller.abort('cancel'));
    expect(await running).toMatchObject({ status: 'cancelled', stopReason: 'cancelled' });
  });

  it('leaves no timer behind when the turn ends first', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const h = setup([{ text: 'quick', toolCalls: [], usage: USAGE, finishReason: 'stop' }]);
    const outcome = await h.engine.run(
      turnInput({ model: 'fake/m', budget: { ...DEFAULT_BUDGET, deadlineMs: 3_600_000 } }),
      h.cp,
      new AbortController().signal,
    );
    expect(outcome).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    expect(timers()).toBe(before);
  });
});
