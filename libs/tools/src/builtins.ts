import { z } from 'zod';
import { createHttpFetch, type HttpFetchOptions } from './http-fetch';
import { defineTool, type ToolDefinition } from './tool';

export const wordCount = defineTool({
  name: 'word_count',
  description: 'Counts the words and characters of a text.',
  schema: z.strictObject({ text: z.string().max(1_000_000).describe('The text to count') }),
  sideEffect: 'read_only',
  timeoutMs: 1_000,
  needsApproval: false,
  async execute({ text }) {
    const words = text.trim() === '' ? 0 : text.trim().split(/\s+/u).length;
    return { words, characters: [...text].length };
  },
});

export const currentTime = defineTool({
  name: 'current_time',
  description: 'Returns the current date and time in UTC and, optionally, in an IANA time zone.',
  schema: z.strictObject({
    timeZone: z.string().max(64).optional().describe('IANA zone, e.g. Europe/Paris'),
  }),
  sideEffect: 'read_only',
  timeoutMs: 1_000,
  needsApproval: false,
  async execute({ timeZone }) {
    const now = new Date();
    const local = timeZone
      ? new Intl.DateTimeFormat('en-GB', { timeZone, dateStyle: 'full', timeStyle: 'long' }).format(now)
      : undefined;
    return { utc: now.toISOString(), ...(local ? { timeZone, local } : {}) };
  },
});

export interface BuiltinToolOptions {
  httpFetch?: HttpFetchOptions;
}

/** The tools every deployment registers; agents still get only the ones they name. */
export function builtinTools(options: BuiltinToolOptions = {}): ToolDefinition[] {
  return [wordCount, currentTime, createHttpFetch(options.httpFetch)] as ToolDefinition[];
}

/** The built-ins with default options (no host exempt from http_fetch's address checks). */
export const BUILTIN_TOOLS: ToolDefinition[] = builtinTools();
