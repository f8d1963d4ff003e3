import { ToolError, type ToolContext } from '@switchboard/tools';
import { markerId } from '../marker';
import { tokenjuiceRetrieveTool } from './retrieve-tool';

const ctx = (tenantId: string): ToolContext => ({
  tenantId,
  sessionId: 's',
  turnId: 't',
  callId: 'c',
  idempotencyKey: 't:c',
  signal: new AbortController().signal,
  resumed: false,
  writeGate: { isOpen: () => true },
});

/** Heavy on what JSON escapes: quotes, backslashes, newlines, a control character. */
const original = Array.from({ length: 800 }, (_, i) => `"line" ${i}\\path\t\u0001 €\n`).join('');
const id = markerId(original);
const store = {
  get: async (tenantId: string, marker: string) =>
    tenantId === 'mine' && marker === id
      ? { id, tool: 'run', kind: 'log', content: original, createdAt: new Date(), expiresAt: new Date() }
      : undefined,
};

describe('tokenjuice_retrieve', () => {
  const tool = tokenjuiceRetrieveTool(store, { maxBytes: 4096 });
  type Answer = { content: string; truncated: boolean; nextStartByte?: number; totalBytes: number };
  const call = async (args: Record<string, unknown>, tenant = 'mine') =>
    (await tool.execute(tool.schema.parse(args), ctx(tenant))) as Answer;

  it('pages through the original so each answer’s JSON stays within its budget, and the pages rebuild it exactly', async () => {
    let at = 0;
    const pages: Buffer[] = [];
    for (let i = 0; i < 100; i++) {
      const a = await call({ marker: `tj:${id}`, startByte: at });
      expect(Buffer.byteLength(JSON.stringify(a.content))).toBeLessThanOrEqual(4096);
      pages.push(Buffer.from(a.content));
      if (!a.truncated) break;
      at = a.nextStartByte!;
    }
    expect(pages.length).toBeGreaterThan(3);
    expect(Buffer.concat(pages).toString()).toBe(original);
  });

  it('another tenant’s marker is not found; a malformed one is refused', async () => {
    await expect(call({ marker: `tj:${id}` }, 'theirs')).rejects.toMatchObject({ kind: 'not_found' });
    await expect(call({ marker: 'tj:nope' })).rejects.toBeInstanceOf(ToolError);
    await expect(call({ marker: 'tj:nope' })).rejects.toMatchObject({ kind: 'invalid_arguments' });
  });

  it('refuses lines and bytes together, and ranges that end before they start', () => {
    expect(tool.schema.safeParse({ marker: 'x', startLine: 1, startByte: 0 }).success).toBe(false);
    expect(tool.schema.safeParse({ marker: 'x', startLine: 5, endLine: 4 }).success).toBe(false);
    expect(tool.schema.safeParse({ marker: 'x', startByte: 5, endByte: 4 }).success).toBe(false);
    expect(tool.schema.safeParse({ marker: 'x', startLine: 0 }).success).toBe(false);
    expect(tool.schema.safeParse({ marker: 'x', startLine: 2, endLine: 2 }).success).toBe(true);
  });
});
