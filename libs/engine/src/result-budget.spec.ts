import { checkpoints, turnInput } from './test-support';
import { z } from 'zod';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { defineTool, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import { boundToolResult, TurnEngine } from './engine';
import { type ToolOutcome, type TurnCheckpoints } from './types';

describe('boundToolResult', () => {
  it('leaves a result within the budget alone', () => {
    expect(boundToolResult('{"ok":true}', 100)).toBe('{"ok":true}');
  });

  it('cuts a larger result to the budget and says so', () => {
    const out = boundToolResult('x'.repeat(10_000), 500);
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(500);
    expect(out).toMatch(/…\[truncated: showing the first 500 of 10000 bytes of this tool result\]$/);
    expect(out.startsWith('xxxx')).toBe(true);
  });

  it('never splits a multi-byte character', () => {
    const out = boundToolResult('é'.repeat(1000), 301);
    expect(out).not.toContain('\uFFFD');
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(301);
  });
});

describe('the engine applies the result budget', () => {
  class TwoRounds implements ModelProvider {
    readonly name = 'fake';
    requests: ChatMessage[][] = [];
    async complete(req: ModelRequest): Promise<ModelResponse> {
      this.requests.push(req.messages);
      const first = this.requests.length === 1;
      return {
        text: first ? '' : 'done',
        toolCalls: first ? [{ id: 'c', name: 'big', arguments: '{}' }] : [],
        usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
        finishReason: first ? 'tool_calls' : 'stop',
      };
    }
  }

  it('sends and records the bounded content while keeping the whole outcome', async () => {
    const big = defineTool({
      name: 'big',
      description: 'returns a lot',
      schema: z.strictObject({}),
      sideEffect: 'read_only',
      timeoutMs: 1000,
      needsApproval: false,
      execute: async () => 'y'.repeat(50_000),
    }) as ToolDefinition;
    const provider = new TwoRounds();
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: new ToolRegistry([big]),
      toolResultMaxBytes: 1000,
    });
    const recorded: { outcome: ToolOutcome; content: string }[] = [];
    const cp: TurnCheckpoints = checkpoints({
      recordToolResult: async (_m, outcome, _d, content) => void recorded.push({ outcome, content }),
    });
    const outcome = await engine.run(turnInput({ tools: ['big'] }), cp, new AbortController().signal);
    expect(outcome.status).toBe('completed');
    expect(recorded[0].outcome).toEqual({ ok: true, result: 'y'.repeat(50_000) });
    expect(Buffer.byteLength(recorded[0].content)).toBeLessThanOrEqual(1000);
    expect(recorded[0].content).toContain('[truncated: showing the first 1000 of');
    const toolMessage = provider.requests[1].find((m) => m.role === 'tool');
    expect(toolMessage?.content).toBe(recorded[0].content);
  });
});
