import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import {
  ProviderError,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from './types';

/**
 * The built-in offline provider: replays a fixture conversation with no network.
 * A fixture is a list of rounds; the round played is the number of assistant
 * messages since the last user message, so a resumed turn continues where it was.
 * String values may use {{input}} (the last user message) and {{lastToolResult}}.
 */
export const ScriptedRound = z.strictObject({
  text: z.string().default(''),
  toolCalls: z
    .array(z.strictObject({ name: z.string(), arguments: z.record(z.string(), z.unknown()).default({}) }))
    .default([]),
  /** Simulated model latency before the first byte. */
  delayMs: z.int().min(0).max(600_000).default(0),
  /** Text is streamed in this many deltas. */
  chunks: z.int().min(1).max(1000).default(1),
  /** Fail this round with a provider error of this kind instead of answering. */
  error: z.enum(['rate_limited', 'server', 'auth', 'context_length', 'invalid_response']).optional(),
});
export type ScriptedRound = z.infer<typeof ScriptedRound>;

export const ScriptedFixture = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9._-]+$/),
  rounds: z.array(ScriptedRound).min(1),
});
export type ScriptedFixture = z.infer<typeof ScriptedFixture>;

export const BUILTIN_FIXTURES: ScriptedFixture[] = [
  ScriptedFixture.parse({
    name: 'demo',
    rounds: [
      { toolCalls: [{ name: 'word_count', arguments: { text: '{{input}}' } }] },
      { text: 'I counted your message with the word_count tool: {{lastToolResult}}', chunks: 4 },
    ],
  }),
  ScriptedFixture.parse({ name: 'echo', rounds: [{ text: 'You said: {{input}}' }] }),
  // The archivist's answer for the offline demo (its tenant routes `summarization` here): one fact.
  ScriptedFixture.parse({
    name: 'archivist',
    rounds: [
      {
        text: JSON.stringify({
          facts: [{ title: 'Offline demo', content: 'The user tried the word counter of the offline demo.' }],
        }),
      },
    ],
  }),
];

/** Loads every *.json fixture in a directory; a bad file fails start-up naming the file. */
export function loadFixtureDir(dir: string): ScriptedFixture[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => {
      const file = path.join(dir, f);
      let json: unknown;
      try {
        json = JSON.parse(readFileSync(file, 'utf8'));
      } catch (err) {
        throw new Error(`invalid scripted fixture ${file}: ${(err as Error).message}`);
      }
      const parsed = ScriptedFixture.safeParse(json);
      if (!parsed.success) throw new Error(`invalid scripted fixture ${file}: ${parsed.error.message}`);
      return parsed.data;
    });
}

const estimateTokens = (s: string) => Math.ceil(s.length / 4);

function render(template: string, vars: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (m, key: string) => vars[key] ?? m);
}

function renderValue(value: unknown, vars: Record<string, string>): unknown {
  if (typeof value === 'string') return render(value, vars);
  if (Array.isArray(value)) return value.map((v) => renderValue(v, vars));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderValue(v, vars)]));
  }
  return value;
}

function abortable(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(new ProviderError('cancelled', 'request aborted'));
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(timer);
      reject(new ProviderError('cancelled', 'request aborted'));
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** What a scripted round was asked for (the last RECORDED requests are kept, newest last). */
export interface ScriptedRequestRecord {
  model: string;
  round: number;
  tools: string[];
  toolChoice?: ModelRequest['toolChoice'];
}

const RECORDED = 100;

export class ScriptedProvider implements ModelProvider {
  readonly name = 'scripted';
  private readonly fixtures = new Map<string, ScriptedFixture>();
  /** The latest requests (bounded), so a test can see what the engine asked for (e.g. a tool choice). */
  readonly requests: ScriptedRequestRecord[] = [];

  constructor(fixtures: ScriptedFixture[] = []) {
    for (const f of [...BUILTIN_FIXTURES, ...fixtures]) this.fixtures.set(f.name, f);
  }

  has(model: string): boolean {
    return this.fixtures.has(model);
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const fixture = this.fixtures.get(request.model);
    if (!fixture) throw new ProviderError('bad_request', `unknown scripted fixture "${request.model}"`);
    const { round, vars } = position(request.messages);
    this.requests.push({
      model: request.model,
      round,
      tools: request.tools.map((t) => t.name),
      ...(request.toolChoice ? { toolChoice: request.toolChoice } : {}),
    });
    if (this.requests.length > RECORDED) this.requests.shift();
    const spec = fixture.rounds[Math.min(round, fixture.rounds.length - 1)];
    await abortable(spec.delayMs, request.signal);
    if (spec.error)
      throw new ProviderError(spec.error, `scripted ${spec.error} failure`, { provider: this.name });

    const text = render(spec.text, vars);
    if (text && request.onTextDelta) {
      // Exactly `chunks` deltas (fewer only when the text is shorter than that).
      const n = Math.min(spec.chunks, text.length);
      for (let i = 0; i < n; i++) {
        request.onTextDelta(
          text.slice(Math.floor((i * text.length) / n), Math.floor(((i + 1) * text.length) / n)),
        );
      }
    }
    const toolCalls = forced(spec.toolCalls, request).map((c, i) => ({
      id: `call_${round}_${i}`,
      name: c.name,
      arguments: JSON.stringify(renderValue(c.arguments, vars)),
    }));
    const prompt = request.messages.map((m) => m.content).join('\n');
    return {
      text,
      toolCalls,
      usage: {
        inputTokens: estimateTokens(prompt),
        outputTokens: estimateTokens(text + toolCalls.map((c) => c.arguments).join('')),
        cachedTokens: 0,
      },
      finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    };
  }
}

/**
 * The round's calls under a forced tool choice, as a model obeying it would make them: a named tool
 * keeps only the round's calls to it (one with `{}` arguments when it has none); `required` adds a
 * call to the first offered tool when the round calls none.
 */
function forced(calls: ScriptedRound['toolCalls'], request: ModelRequest): ScriptedRound['toolCalls'] {
  const choice = request.toolChoice;
  if (!choice) return calls;
  if (choice.type === 'none') return [];
  if (choice.type === 'tool') {
    const own = calls.filter((c) => c.name === choice.name);
    return own.length > 0 ? own : [{ name: choice.name, arguments: {} }];
  }
  const first = request.tools[0];
  return calls.length > 0 || !first ? calls : [{ name: first.name, arguments: {} }];
}

function position(messages: ChatMessage[]): { round: number; vars: Record<string, string> } {
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'user') {
      lastUser = i;
      break;
    }
  }
  const after = messages.slice(lastUser + 1);
  const lastTool = [...after].reverse().find((m) => m.role === 'tool');
  return {
    round: after.filter((m) => m.role === 'assistant').length,
    vars: {
      input: lastUser >= 0 ? messages[lastUser].content : '',
      lastToolResult: lastTool?.content ?? '',
    },
  };
}
