import { z } from 'zod';
import { BUILTIN_TOOLS, currentTime, wordCount } from './builtins';
import { ToolRegistry } from './registry';
import { defineTool, toolSpec, type ToolContext, type ToolDefinition } from './tool';

const ctx: ToolContext = {
  tenantId: 't',
  sessionId: 's',
  turnId: 'turn',
  callId: 'c',
  idempotencyKey: 'turn:c',
  signal: new AbortController().signal,
  resumed: false,
  writeGate: { isOpen: () => true },
};

function tool(name: string, schema: z.ZodType = z.strictObject({})): ToolDefinition {
  return defineTool({
    name,
    description: `the ${name} tool`,
    schema,
    sideEffect: 'read_only',
    timeoutMs: 100,
    needsApproval: false,
    execute: async () => name,
  });
}

describe('word_count', () => {
  it.each([
    ['spaces', 'one two  three', 3, 14],
    ['tabs, newlines and padding', '  padded\tand\nsplit  ', 3, 20],
    ['an empty text', '', 0, 0],
    ['only whitespace', '   ', 0, 3],
    ['accented letters', 'naïve café', 2, 10],
  ])('counts %s', async (_label, text, words, characters) => {
    expect(await wordCount.execute({ text }, ctx)).toEqual({ words, characters });
  });

  it('counts characters by code point, not UTF-16 unit', async () => {
    expect(await wordCount.execute({ text: '😀 𝒳' }, ctx)).toEqual({ words: 2, characters: 3 });
  });

  it('counts words separated by unicode whitespace', async () => {
    expect(await wordCount.execute({ text: 'a\u00a0b\u3000c' }, ctx)).toMatchObject({ words: 3 });
  });

  it('rejects arguments that are not a { text } object', () => {
    expect(wordCount.schema.safeParse({ text: 'x', extra: 1 }).success).toBe(false);
    expect(wordCount.schema.safeParse({ text: 3 }).success).toBe(false);
    expect(wordCount.schema.safeParse({}).success).toBe(false);
  });
});

describe('current_time', () => {
  const NOW = new Date('2025-01-15T12:34:56.000Z');
  beforeEach(() => {
    jest.useFakeTimers({ now: NOW });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('returns UTC only without a time zone', async () => {
    expect(await currentTime.execute({}, ctx)).toEqual({ utc: '2025-01-15T12:34:56.000Z' });
  });

  it('adds the local time in the requested IANA zone', async () => {
    const result = (await currentTime.execute({ timeZone: 'Asia/Tokyo' }, ctx)) as Record<string, string>;
    expect(result.utc).toBe('2025-01-15T12:34:56.000Z');
    expect(result.timeZone).toBe('Asia/Tokyo');
    expect(result.local).toContain('21:34:56');
    expect(result.local).toContain('15 January 2025');
  });

  it('rejects an unknown time zone', async () => {
    await expect(currentTime.execute({ timeZone: 'Mars/Olympus' }, ctx)).rejects.toThrow(RangeError);
  });
});

describe('ToolRegistry', () => {
  it('registers the built-ins by default', () => {
    const registry = new ToolRegistry();
    expect(registry.names()).toEqual(['word_count', 'current_time', 'http_fetch']);
    expect(registry.get('word_count')).toBe(wordCount);
    expect(BUILTIN_TOOLS.slice(0, 2)).toEqual([wordCount, currentTime]);
    expect(registry.get('http_fetch')?.sideEffect).toBe('network');
  });

  it('starts from the given tools only', () => {
    const registry = new ToolRegistry([tool('a')]);
    expect(registry.names()).toEqual(['a']);
    expect(registry.get('word_count')).toBeUndefined();
  });

  it('throws on a duplicate registration, naming the tool', () => {
    const registry = new ToolRegistry([tool('a')]);
    expect(() => registry.register(tool('a'))).toThrow(/"a" registered twice/);
    expect(() => new ToolRegistry([tool('b'), tool('b')])).toThrow(/"b"/);
  });

  it('gives a turn a view with its own tools over the registry, which stays as it was', () => {
    const registry = new ToolRegistry([tool('a')]);
    expect(registry.withTurnTools([])).toBe(registry);
    const raw = { ...tool('srv__x'), parameters: { type: 'object', properties: { q: { type: 'string' } } } };
    const view = registry.withTurnTools([raw, tool('a')]);
    expect(view.names()).toEqual(['a', 'srv__x']);
    expect(view.get('a')).toBe(registry.get('a'));
    expect(view.unknown(['a', 'srv__x', 'z'])).toEqual(['z']);
    // A tool that brings its own JSON Schema is sent as is, never strict.
    expect(view.specsFor(['srv__x', 'a'], 'strict')).toEqual([
      { name: 'srv__x', description: 'the srv__x tool', parameters: raw.parameters, strict: false },
      expect.objectContaining({ name: 'a', strict: true }),
    ]);
    expect(registry.names()).toEqual(['a']);
    expect(registry.get('srv__x')).toBeUndefined();
  });

  it('lists the wanted names no tool has, in the order asked', () => {
    const registry = new ToolRegistry([tool('a'), tool('b')]);
    expect(registry.unknown(['z', 'a', 'y', 'b'])).toEqual(['z', 'y']);
    expect(registry.unknown(['a'])).toEqual([]);
  });

  it('returns specs in the order asked, skipping unknown names', () => {
    const registry = new ToolRegistry([tool('a'), tool('b'), tool('c')]);
    expect(registry.specsFor(['c', 'missing', 'a']).map((s) => s.name)).toEqual(['c', 'a']);
    expect(registry.specsFor([])).toEqual([]);
    expect(registry.specsFor(['b'])[0]).toEqual(toolSpec(tool('b')));
  });
});

describe('toolSpec', () => {
  it('emits name, description and a JSON schema without $schema', () => {
    const spec = toolSpec(wordCount);
    expect(spec.name).toBe('word_count');
    expect(spec.description).toBe('Counts the words and characters of a text.');
    expect(spec.parameters).not.toHaveProperty('$schema');
    expect(spec.parameters).toEqual({
      type: 'object',
      properties: { text: { type: 'string', maxLength: 1_000_000, description: 'The text to count' } },
      required: ['text'],
      additionalProperties: false,
    });
  });

  it('closes strict objects, nested ones too, and lists only required properties', () => {
    const spec = toolSpec(
      tool(
        'nested',
        z.strictObject({
          query: z.string(),
          limit: z.int().min(1).optional(),
          filter: z.strictObject({ tags: z.array(z.string()) }),
        }),
      ),
    );
    expect(spec.parameters).toMatchObject({
      type: 'object',
      required: ['query', 'filter'],
      additionalProperties: false,
      properties: {
        limit: { type: 'integer', minimum: 1 },
        filter: {
          type: 'object',
          additionalProperties: false,
          properties: { tags: { type: 'array', items: { type: 'string' } } },
        },
      },
    });
  });

  it('describes an argument-less tool as an empty closed object', () => {
    expect(toolSpec(tool('none')).parameters).toEqual({
      type: 'object',
      properties: {},
      additionalProperties: false,
    });
  });
});
