import {
  compactToolResult,
  markerId,
  markerText,
  parseMarker,
  resolveCompression,
  sliceOriginal,
  tokenjuiceCorpus,
  withRetrieveTool,
} from './index';

describe('compactToolResult', () => {
  const corpus = tokenjuiceCorpus();
  const entry = (file: string) => corpus.find((e) => e.file === file)!;

  it('compacts http_fetch’s text, keeps its other fields, and keeps the exact text as the original', () => {
    const e = entry('api-charges-list.json');
    const c = compactToolResult(e.value, { mode: 'full', tool: e.tool, args: e.args })!;
    const value = e.value as { text: string };
    expect(c.kind).toBe('json');
    expect(c.original).toBe(value.text);
    expect(c.marker).toBe(markerId(value.text));
    expect(
      c.content.startsWith(`${markerText(c.marker!)} http_fetch returned ${c.originalBytes} bytes of json`),
    ).toBe(true);
    expect(c.content).toContain(`tokenjuice_retrieve {"marker":"tj:${c.marker}"}`);
    expect(c.content).toContain('"status":200');
    expect(c.contentBytes).toBe(Buffer.byteLength(c.content));
  });

  it('reads an MCP result’s text content', () => {
    const e = entry('failing-test-run.log');
    const c = compactToolResult(e.value, { mode: 'full', tool: e.tool, args: e.args })!;
    expect(c.kind).toBe('log');
    expect(c.original).toBe((e.value as { content: { text: string }[] }).content[0].text);
  });

  it('stores any other value as 2-space JSON and compacts the value itself', () => {
    const rows = Array.from({ length: 60 }, (_, i) => ({ id: i, name: `user ${i}`, active: true }));
    const c = compactToolResult({ users: rows }, { mode: 'full', tool: 'list_users' })!;
    expect(c.original).toBe(JSON.stringify({ users: rows }, null, 2));
    expect(c.content).toContain('same in every row: active=true');
    expect(c.lossy).toBe(true);
  });

  it('light rewrites losslessly, leaves no marker, and leaves alone what it cannot rewrite', () => {
    const rows = Array.from({ length: 60 }, (_, i) => ({ id: i, name: `user ${i}`, active: true }));
    const light = compactToolResult(rows, { mode: 'light', tool: 'list_users' })!;
    expect(light.lossy).toBe(false);
    expect(light.marker).toBeUndefined();
    expect(light.content).toMatch(
      /^\[list_users returned \d+ bytes of json; TokenJuice rewrote it without loss\]/,
    );
    const e = entry('git-log-patch-with-lockfile.diff');
    expect(compactToolResult(e.value, { mode: 'light', tool: e.tool, args: e.args })).toBeUndefined();
  });

  it('leaves small results, scalars and MCP results with structured content alone', () => {
    expect(compactToolResult('short', { mode: 'full', tool: 't' })).toBeUndefined();
    expect(compactToolResult(42, { mode: 'full', tool: 't' })).toBeUndefined();
    expect(compactToolResult(null, { mode: 'full', tool: 't' })).toBeUndefined();
    const big = 'x\n'.repeat(5000);
    const structured = { content: [{ type: 'text', text: big }], structuredContent: { a: 1 } };
    const c = compactToolResult(structured, { mode: 'full', tool: 'srv__t' });
    // Compacted as JSON (the text field is cut), never read as its text alone.
    expect(c!.kind).toBe('json');
    expect(c!.original).toBe(JSON.stringify(structured, null, 2));
  });
});

describe('markers', () => {
  it('reads the forms a model may write', () => {
    const id = markerId('original');
    expect(id).toMatch(/^[0-9a-f]{24}$/);
    for (const form of [markerText(id), `tj:${id}`, id, ` ⟦ tj:${id.toUpperCase()} ⟧ `])
      expect(parseMarker(form)).toBe(id);
    for (const bad of ['', 'tj:', 'tj:xyz', `${id}0`, `tj:${id}; DROP`])
      expect(parseMarker(bad)).toBeUndefined();
  });
});

describe('sliceOriginal', () => {
  const text = 'one\ntwo\nthree\nfour\n';

  it('returns the whole original', () => {
    expect(sliceOriginal(text, {}, 1000)).toEqual({
      content: text,
      totalBytes: 19,
      totalLines: 5,
      range: { startByte: 0, endByte: 19 },
      truncated: false,
    });
  });

  it('returns 1-based inclusive lines', () => {
    const s = sliceOriginal(text, { startLine: 2, endLine: 3 }, 1000);
    expect(s.content).toBe('two\nthree\n');
    expect(s.range).toEqual({ startByte: 4, endByte: 14, startLine: 2, endLine: 3 });
    expect(sliceOriginal(text, { startLine: 4 }, 1000).content).toBe('four\n');
    expect(sliceOriginal(text, { startLine: 9 }, 1000).content).toBe('');
  });

  it('returns byte ranges on character boundaries', () => {
    const utf = 'añb€c';
    expect(sliceOriginal(utf, { startByte: 1, endByte: 3 }, 100).content).toBe('ñ');
    // A range starting inside ñ starts at its first byte.
    expect(sliceOriginal(utf, { startByte: 2, endByte: 4 }, 100).content).toBe('ñb');
  });

  it('cuts at maxBytes and says where to go on', () => {
    const s = sliceOriginal(text, {}, 6);
    expect(s).toMatchObject({ content: 'one\ntw', truncated: true, nextStartByte: 6 });
    expect(sliceOriginal(text, { startByte: s.nextStartByte }, 100).content).toBe('o\nthree\nfour\n');
  });
});

describe('the agent setting', () => {
  it('auto is light for a hint:coding agent and full for the others; the rest are as set', () => {
    expect(resolveCompression('auto', 'hint:coding')).toBe('light');
    expect(resolveCompression(undefined, 'hint:coding')).toBe('light');
    expect(resolveCompression('auto', 'hint:chat')).toBe('full');
    expect(resolveCompression('auto', 'anthropic/claude-sonnet-4')).toBe('full');
    expect(resolveCompression('full', 'hint:coding')).toBe('full');
    expect(resolveCompression('off', 'openai/gpt-5')).toBe('off');
    expect(resolveCompression('light', 'openai/gpt-5')).toBe('light');
  });

  it('offers tokenjuice_retrieve to full-mode agents with tools, appended, when the deployment has it', () => {
    const registered = ['http_fetch', 'tokenjuice_retrieve'];
    expect(withRetrieveTool(['http_fetch'], 'full', registered)).toEqual([
      'http_fetch',
      'tokenjuice_retrieve',
    ]);
    expect(withRetrieveTool(['http_fetch'], 'light', registered)).toEqual(['http_fetch']);
    expect(withRetrieveTool(['http_fetch'], 'off', registered)).toEqual(['http_fetch']);
    expect(withRetrieveTool([], 'full', registered)).toEqual([]);
    expect(withRetrieveTool(['http_fetch'], 'full', ['http_fetch'])).toEqual(['http_fetch']);
    expect(withRetrieveTool(['tokenjuice_retrieve', 'x'], 'full', registered)).toEqual([
      'tokenjuice_retrieve',
      'x',
    ]);
  });
});
