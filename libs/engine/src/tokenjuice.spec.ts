import { z } from 'zod';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { markerId, tokenjuiceCorpus } from '@switchboard/tokenjuice';
import { ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import { TurnEngine, type CompactionOriginals } from './engine';
import { checkpoints, turnInput } from './test-support';
import type { TurnCheckpoints } from './types';

/** A model that calls `tool` once, then answers. */
class OneCall implements ModelProvider {
  readonly name = 'fake';
  requests: ChatMessage[][] = [];
  constructor(private readonly tool: string) {}
  async complete(req: ModelRequest): Promise<ModelResponse> {
    // The summarizer's side call: a short summary.
    if (req.messages[0]?.role === 'system' && req.messages[0].content.includes('summarizer sub-agent')) {
      return {
        text: 'three tests failed',
        toolCalls: [],
        usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
        finishReason: 'stop',
      };
    }
    this.requests.push(req.messages);
    const first = this.requests.length === 1;
    return {
      text: first ? '' : 'done',
      toolCalls: first ? [{ id: 'c1', name: this.tool, arguments: '{"command":"npm test"}' }] : [],
      usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
      finishReason: first ? 'tool_calls' : 'stop',
    };
  }
}

const log = tokenjuiceCorpus().find((e) => e.file === 'failing-test-run.log')!;
const logText = (log.value as { content: { text: string }[] }).content[0].text;

function tool(name: string, value: unknown, extra: Partial<ToolDefinition> = {}): ToolDefinition {
  return {
    name,
    description: 'returns a log',
    schema: z.strictObject({ command: z.string() }),
    sideEffect: 'read_only',
    timeoutMs: 1000,
    needsApproval: false,
    execute: async () => value,
    ...extra,
  };
}

async function run(
  t: ToolDefinition,
  mode: 'full' | 'light' | 'off' | undefined,
  originals?: CompactionOriginals,
  summarizeAboveBytes?: number,
): Promise<{ content: string; events: { type: string; data: unknown }[]; provider: OneCall }> {
  const provider = new OneCall(t.name);
  const engine = new TurnEngine({
    providers: new ProviderRegistry({}, [provider]),
    tools: new ToolRegistry([t]),
    toolResultMaxBytes: 64 * 1024,
    summarizeAboveBytes,
    tokenjuice: { originals },
  });
  let content = '';
  const events: { type: string; data: unknown }[] = [];
  const cp: TurnCheckpoints = checkpoints({
    recordToolResult: async (_m, _o, _d, c) => void (content = c),
    emit: async (type, data) => void events.push({ type, data }),
  });
  const outcome = await engine.run(
    turnInput({
      tools: [t.name],
      toolResultCompression: mode,
      ...(summarizeAboveBytes ? { summarizer: { model: 'fake/small', consecutiveFailures: 0 } } : {}),
    }),
    cp,
    new AbortController().signal,
  );
  expect(outcome.status).toBe('completed');
  return { content, events, provider };
}

describe('TokenJuice in the engine', () => {
  it('full: keeps the original first, then records and sends the compacted result with its marker', async () => {
    const kept: Parameters<CompactionOriginals['keep']>[0][] = [];
    const { content, events, provider } = await run(tool('run_shell', log.value), 'full', {
      keep: async (o) => void kept.push(o),
    });
    const id = markerId(logText);
    expect(kept).toEqual([
      expect.objectContaining({
        tenantId: 'x',
        id,
        turnId: 't',
        callId: 'c1',
        tool: 'run_shell',
        kind: 'log',
      }),
    ]);
    expect(kept[0].content).toBe(logText);
    expect(content.startsWith(`⟦tj:${id}⟧`)).toBe(true);
    expect(content).toContain('● agent request limits › keeps the tools in order');
    expect(Buffer.byteLength(content)).toBeLessThan(logText.length / 3);
    expect(provider.requests[1].find((m) => m.role === 'tool')?.content).toBe(content);
    expect(events.find((e) => e.type === 'tool_result_compacted')?.data).toEqual({
      callId: 'c1',
      tool: 'run_shell',
      kind: 'log',
      mode: 'full',
      lossy: true,
      marker: `tj:${id}`,
      originalBytes: Buffer.byteLength(logText),
      contentBytes: Buffer.byteLength(content),
    });
  });

  it('full: a store that fails leaves the result as it was', async () => {
    const { content, events } = await run(tool('run_shell', log.value), 'full', {
      keep: async () => Promise.reject(new Error('database down')),
    });
    expect(content).toBe(JSON.stringify({ ok: true, result: log.value }));
    expect(events.some((e) => e.type === 'tool_result_compacted')).toBe(false);
  });

  it('full without a store rewrites only losslessly', async () => {
    const rows = Array.from({ length: 80 }, (_, i) => ({ id: i, status: 'ok', region: 'eu' }));
    const { content, events } = await run(tool('list', rows), 'full');
    expect(content).toMatch(/^\[list returned \d+ bytes of json; TokenJuice rewrote it without loss\]/);
    const lines = content.split('\n');
    for (let i = 0; i < 80; i++) expect(lines).toContain(String(i));
    expect(events.find((e) => e.type === 'tool_result_compacted')?.data).toMatchObject({
      mode: 'light',
      lossy: false,
    });
  });

  it('light keeps a log as it is and stores nothing; off and absent do nothing', async () => {
    const keep = jest.fn(async () => undefined);
    for (const mode of ['light', 'off', undefined] as const) {
      const { content } = await run(tool('run_shell', log.value), mode, { keep });
      expect(content).toBe(JSON.stringify({ ok: true, result: log.value }));
    }
    expect(keep).not.toHaveBeenCalled();
  });

  it('never compacts a tool whose result is raw (tokenjuice_retrieve)', async () => {
    const keep = jest.fn(async () => undefined);
    const { content } = await run(tool('tokenjuice_retrieve', logText, { rawResult: true }), 'full', {
      keep,
    });
    expect(content).toBe(JSON.stringify({ ok: true, result: logText }));
    expect(keep).not.toHaveBeenCalled();
  });

  it('a compacted result still over the summarizer threshold is summarised, its marker line kept', async () => {
    const { content } = await run(tool('run_shell', log.value), 'full', { keep: async () => undefined }, 500);
    const id = markerId(logText);
    const [first, summary] = content.split('\n');
    expect(first.startsWith(`⟦tj:${id}⟧ run_shell returned`)).toBe(true);
    expect(first).toContain(`tokenjuice_retrieve {"marker":"tj:${id}"}`);
    expect(JSON.parse(summary)).toMatchObject({ ok: true, summarized: true, summary: 'three tests failed' });
  });
});
