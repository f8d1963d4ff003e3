import { checkpoints, turnInput } from './test-support';
import { z } from 'zod';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { defineTool, ToolRegistry, type ToolContext, type ToolDefinition } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { type ToolOutcome, type TurnCheckpoints } from './types';

describe('the write gate', () => {
  it('is open while the call runs and closed once its result is settled, timed out or not', async () => {
    const observed: { phase: string; open: boolean }[] = [];
    let lateCheck!: Promise<void>;
    const slow = defineTool({
      name: 'slow_write',
      description: 'writes after a while',
      schema: z.strictObject({}),
      sideEffect: 'local_write',
      timeoutMs: 20,
      needsApproval: false,
      execute: async (_args, ctx: ToolContext) => {
        observed.push({ phase: 'start', open: ctx.writeGate.isOpen() });
        lateCheck = new Promise<void>((resolve) =>
          setTimeout(() => {
            observed.push({ phase: 'after timeout', open: ctx.writeGate.isOpen() });
            resolve();
          }, 60),
        );
        await lateCheck;
        return 'written';
      },
    }) as ToolDefinition;
    let round = 0;
    const provider: ModelProvider = {
      name: 'fake',
      complete: async (_r: ModelRequest): Promise<ModelResponse> => ({
        text: round++ === 0 ? '' : 'done',
        toolCalls: round === 1 ? [{ id: 'w', name: 'slow_write', arguments: '{}' }] : [],
        usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
        finishReason: round === 1 ? 'tool_calls' : 'stop',
      }),
    };
    const outcomes: ToolOutcome[] = [];
    const cp: TurnCheckpoints = checkpoints({ recordToolResult: async (_m, o) => void outcomes.push(o) });
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: new ToolRegistry([slow]),
    });
    const outcome = await engine.run(turnInput({ tools: ['slow_write'] }), cp, new AbortController().signal);
    expect(outcome.status).toBe('completed');
    expect(outcomes[0]).toMatchObject({ ok: false, kind: 'timeout' });
    await lateCheck;
    expect(observed).toEqual([
      { phase: 'start', open: true },
      { phase: 'after timeout', open: false },
    ]);
  });
});
