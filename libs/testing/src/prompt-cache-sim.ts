/**
 * Prefix caching as the providers document it, simulated for the fake model server (docs/adr/0032).
 *
 * A request is cut into the blocks a provider caches by: tools, then the system prompt
 * (`instructions`), then each message or input item (Anthropic: each content block). A prefix's
 * size in tokens is estimated like the server's usage, ceil(chars / 4) of the blocks' JSON.
 *
 * - OpenAI (Chat Completions and Responses): automatic. A prompt of at least 1024 tokens is cached
 *   whole; a later request with the same `prompt_cache_key` (or none) and the same model reads the
 *   longest cached prefix, counted in 128-token steps. Writes are not reported (`cache_write_tokens`
 *   stays 0): only explicit breakpoints on newer models report them.
 * - Anthropic: only at `cache_control` breakpoints. Each breakpoint looks for a cached prefix ending
 *   at it or at one of the 20 blocks before it; the longest hit is read. The prefix up to the last
 *   breakpoint, past what was read, is written (the `ttl` of that breakpoint: 5 min or 1 h). A prefix
 *   under 1024 tokens is never cached. A hit refreshes its entry's lifetime.
 */
import { createHash } from 'node:crypto';

export type CacheWire = 'openai.chat.completions' | 'openai.responses' | 'anthropic.messages';

export interface CacheOutcome {
  /** Prompt tokens read from the cache. */
  read: number;
  /** Prompt tokens written to the cache (Anthropic only). */
  write: number;
  /** Of `write`, written with the 1 h lifetime. */
  write1h: number;
}

export interface PromptCacheOptions {
  /** The smallest cacheable prefix, in tokens (both providers: 1024). */
  minTokens?: number;
  /** The clock entries expire by (ms); Date.now by default. */
  now?: () => number;
}

interface Block {
  json: string;
  /** Anthropic: this block carries a breakpoint, with its lifetime. */
  breakpoint?: '5m' | '1h';
}

type Json = Record<string, unknown>;

function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

function ttlOf(block: unknown): '5m' | '1h' | undefined {
  if (!isRecord(block) || !isRecord(block['cache_control'])) return undefined;
  return block['cache_control']['ttl'] === '1h' ? '1h' : '5m';
}

/** Without its breakpoint: a block's content, not its marker, makes the prefix. */
function stripped(block: unknown): string {
  if (!isRecord(block)) return JSON.stringify(block);
  const { cache_control: _ignored, ...rest } = block;
  return JSON.stringify(rest);
}

function blocksOf(wire: CacheWire, body: Json): Block[] {
  const tools = asArray(body['tools']);
  if (wire === 'anthropic.messages') {
    const blocks: Block[] = tools.map((t) => ({ json: stripped(t), breakpoint: ttlOf(t) }));
    const system = body['system'];
    if (typeof system === 'string') blocks.push({ json: stripped({ type: 'text', text: system }) });
    for (const b of asArray(system)) blocks.push({ json: stripped(b), breakpoint: ttlOf(b) });
    for (const m of asArray(body['messages'])) {
      if (!isRecord(m)) continue;
      const content = m['content'];
      if (typeof content === 'string') {
        // A string is one text block to the API: the same prefix as the block itself.
        blocks.push({ json: JSON.stringify([m['role'], stripped({ type: 'text', text: content })]) });
      } else {
        for (const b of asArray(content)) {
          blocks.push({ json: JSON.stringify([m['role'], stripped(b)]), breakpoint: ttlOf(b) });
        }
      }
    }
    return blocks;
  }
  const blocks: Block[] = tools.map((t) => ({ json: JSON.stringify(t) }));
  if (wire === 'openai.responses') {
    if (typeof body['instructions'] === 'string') blocks.push({ json: JSON.stringify(body['instructions']) });
    const input = body['input'];
    if (typeof input === 'string') blocks.push({ json: JSON.stringify(input) });
    for (const item of asArray(input)) blocks.push({ json: JSON.stringify(item) });
  } else {
    for (const m of asArray(body['messages'])) blocks.push({ json: JSON.stringify(m) });
  }
  return blocks;
}

const tokensOf = (chars: number): number => Math.ceil(chars / 4);

/** The simulated caches of one fake server: every endpoint's entries, by prefix hash. */
export class PromptCacheSim {
  private readonly entries = new Map<string, number>();
  private readonly minTokens: number;
  private readonly now: () => number;

  constructor(options: PromptCacheOptions = {}) {
    this.minTokens = options.minTokens ?? 1024;
    this.now = options.now ?? Date.now;
  }

  /** Forget every entry (a provider that lost its cache). */
  clear(): void {
    this.entries.clear();
  }

  /** What the request reads from and writes to the cache; the entries are updated. */
  apply(wire: CacheWire, body: Json): CacheOutcome {
    const blocks = blocksOf(wire, body);
    const model = typeof body['model'] === 'string' ? body['model'] : '';
    const scope =
      wire === 'anthropic.messages'
        ? `anthropic:${model}`
        : `openai:${model}:${typeof body['prompt_cache_key'] === 'string' ? body['prompt_cache_key'] : ''}`;
    // Each boundary's cumulative hash and size.
    const hashes: string[] = [];
    const tokens: number[] = [];
    const hash = createHash('sha256').update(scope);
    let chars = 0;
    for (const b of blocks) {
      hash.update(`\u0000${b.json}`);
      chars += b.json.length;
      hashes.push(hash.copy().digest('hex'));
      tokens.push(tokensOf(chars));
    }
    return wire === 'anthropic.messages'
      ? this.anthropic(blocks, hashes, tokens)
      : this.openai(hashes, tokens);
  }

  private live(key: string): boolean {
    const expires = this.entries.get(key);
    if (expires === undefined) return false;
    if (expires <= this.now()) {
      this.entries.delete(key);
      return false;
    }
    return true;
  }

  private openai(hashes: string[], tokens: number[]): CacheOutcome {
    let read = 0;
    for (let i = hashes.length - 1; i >= 0; i--) {
      if (this.live(hashes[i])) {
        read = tokens[i] >= this.minTokens ? Math.floor(tokens[i] / 128) * 128 : 0;
        break;
      }
    }
    // The whole prompt is cached (OpenAI keeps entries 5–10 min idle, up to 1 h; 24 h retention asked).
    const last = hashes.length - 1;
    if (last >= 0 && tokens[last] >= this.minTokens) this.entries.set(hashes[last], this.now() + 600_000);
    // Every earlier boundary is a prefix of it, so reachable too.
    for (let i = 0; i < last; i++)
      if (tokens[i] >= this.minTokens) this.entries.set(hashes[i], this.now() + 600_000);
    return { read, write: 0, write1h: 0 };
  }

  private anthropic(blocks: Block[], hashes: string[], tokens: number[]): CacheOutcome {
    const breakpoints = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []));
    if (breakpoints.length === 0) return { read: 0, write: 0, write1h: 0 };
    let hit = -1;
    for (const bp of breakpoints) {
      for (let i = bp; i >= Math.max(0, bp - 20); i--) {
        if (i > hit && this.live(hashes[i])) {
          hit = i;
          break;
        }
      }
    }
    const read = hit >= 0 ? tokens[hit] : 0;
    let write = 0;
    let write1h = 0;
    for (const bp of breakpoints) {
      const ttl = blocks[bp].breakpoint === '1h' ? 3_600_000 : 300_000;
      if (tokens[bp] < this.minTokens) continue;
      // A hit refreshes its entry; a new prefix is written.
      this.entries.set(hashes[bp], this.now() + ttl);
    }
    if (hit >= 0) {
      const bpTtl = blocks.slice(0, hit + 1).some((b) => b.breakpoint === '1h') ? 3_600_000 : 300_000;
      this.entries.set(hashes[hit], this.now() + bpTtl);
    }
    const lastBp = breakpoints[breakpoints.length - 1];
    if (tokens[lastBp] >= this.minTokens && lastBp > hit) {
      write = tokens[lastBp] - read;
      if (blocks[lastBp].breakpoint === '1h') write1h = write;
    }
    return { read, write, write1h };
  }
}
