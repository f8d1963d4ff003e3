import type { ChatMessage } from '@switchboard/providers';
import type { RecalledRecord } from './context';

/**
 * The decision record's strategy (seed 001 stage 6.7, docs/adr/0060): how the turn reached its answer.
 * - `tool_assisted`: it called a tool that neither reads memory nor the web (or several kinds).
 * - `web_augmented`: the only tools it called read the web (`WEB_TOOLS`), memory tools aside.
 * - `retrieval_augmented`: no tool but the memory tools, and records recalled into its context or
 *   read with `memory_search` / `memory_get`.
 * - `direct_answer`: no tool and nothing recalled.
 */
export type DecisionStrategy = 'direct_answer' | 'retrieval_augmented' | 'web_augmented' | 'tool_assisted';

/** Tools that read the agent's own memory: retrieval, not a tool-assisted action. */
export const RETRIEVAL_TOOLS: ReadonlySet<string> = new Set(['memory_search', 'memory_get']);

/**
 * Tools that read the web. `http_fetch` is the built-in one; `web_search` / `web_fetch` are the names
 * web tools commonly take (an MCP server's tool keeps its own name after `<server>__`).
 */
export const WEB_TOOLS: ReadonlySet<string> = new Set(['http_fetch', 'web_search', 'web_fetch']);

const baseName = (name: string) => {
  const at = name.lastIndexOf('__');
  return at < 0 ? name : name.slice(at + 2);
};

export const isWebTool = (name: string) => WEB_TOOLS.has(baseName(name));
export const isRetrievalTool = (name: string) => RETRIEVAL_TOOLS.has(name);

/** The tool names the turn's assistant messages called, in order (repeats kept). */
export function calledTools(messages: ChatMessage[]): string[] {
  return messages.flatMap((m) => (m.role === 'assistant' ? m.toolCalls.map((c) => c.name) : []));
}

export function decisionStrategy(tools: string[], recalled: number): DecisionStrategy {
  if (tools.some((t) => !isWebTool(t) && !isRetrievalTool(t))) return 'tool_assisted';
  if (tools.some(isWebTool)) return 'web_augmented';
  if (recalled > 0 || tools.some(isRetrievalTool)) return 'retrieval_augmented';
  return 'direct_answer';
}

/** Longest citations list appended, in characters; sources past it are counted, not listed. */
export const CITATIONS_MAX_CHARS = 2_000;

/** A web source a call read: `http_fetch`'s (or a web tool's) `url` argument, when it parses. */
function webSources(messages: ChatMessage[]): string[] {
  const urls: string[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const c of m.toolCalls) {
      if (!isWebTool(c.name)) continue;
      try {
        const url = (JSON.parse(c.arguments) as { url?: unknown }).url;
        if (typeof url === 'string' && /^https?:\/\//i.test(url) && !urls.includes(url)) urls.push(url);
      } catch {
        // Arguments that do not parse name no source.
      }
    }
  }
  return urls;
}

/**
 * Seed 001 stage 6.1: the local (memory) and web citation lists appended to the final text, when the
 * agent asks for citations (`memory.citations`). Local: the records recalled into the turn's context
 * by episodic recall or as facts (standing preferences are not sources of an answer), by
 * `source_ref` and title. Web: the URLs the turn's web tools read. Nothing is appended without sources.
 */
export function withCitations(text: string, recalled: RecalledRecord[], messages: ChatMessage[]): string {
  const local = recalled
    .filter((r) => r.via !== 'preferences')
    .map((r) => `- [${r.ref}] ${r.title.replace(/\s+/g, ' ').trim()}`);
  const web = webSources(messages).map((u) => `- ${u}`);
  if (local.length === 0 && web.length === 0) return text;
  const lines: string[] = [];
  let chars = 0;
  let left = 0;
  const section = (heading: string, items: string[]) => {
    if (items.length === 0) return;
    lines.push(heading);
    for (const item of items) {
      if (chars + item.length > CITATIONS_MAX_CHARS) left++;
      else {
        lines.push(item);
        chars += item.length + 1;
      }
    }
  };
  section('Sources from memory:', local);
  section('Sources from the web:', web);
  if (left > 0) lines.push(`(and ${left} more)`);
  return `${text.trimEnd()}\n\n${lines.join('\n')}`;
}
