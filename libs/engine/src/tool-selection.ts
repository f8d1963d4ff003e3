import { createHash } from 'node:crypto';
import { cosine, type EmbedderRegistry, type ToolSpec } from '@switchboard/providers';

/**
 * Semantic tool selection (seed 001's `SemanticToolSelector`, docs/adr/0049): when a turn has more
 * tools than the agent's `maxPerTurn` (its own, MCP, sub-agent and client tools alike), the model is
 * offered the pinned ones plus those whose name and description are most similar to the turn's
 * input, up to `maxPerTurn`, and every tool already called in the turn. The offered tools keep
 * their original order, so one input gives a byte-identical tool list (the provider's prompt cache
 * still hits across the turn's rounds and across turns that pick the same tools).
 */

/** An agent's tool selection, as the turn runs it. */
export interface ToolSelectionSettings {
  /** Most tools offered per round, pinned included (tools already called come on top). */
  maxPerTurn: number;
  /** Always offered, whatever the input (names the turn does not have are ignored). */
  pinned: string[];
  /** `<provider>/<model>` that embeds the input and the tools (the local embedder by default). */
  embedder: string;
}

/** The built-in embedder agents use when they name none: offline, free, some meaning. */
export const DEFAULT_EMBEDDER = 'local/words-100d';

/** What a tool is embedded as: its name (words split at `_`, `-`, `.`) and its description. */
export function toolText(tool: Pick<ToolSpec, 'name' | 'description'>): string {
  return `${tool.name.replace(/[_\-.]+/g, ' ')}: ${tool.description}`;
}

/**
 * Ranks tools for a turn and caches their vectors per embedder, keyed by a hash of what is
 * embedded: a tool whose name or description changes is embedded again (the old entry ages out),
 * one that does not never is. The cache is bounded (least recently used out first).
 */
export class SemanticToolSelector {
  private readonly cache = new Map<string, Float32Array>();

  constructor(
    private readonly embedders: EmbedderRegistry,
    private readonly maxCached = 10_000,
  ) {}

  /** Tool vectors embedded so far (for tests and metrics). */
  get cachedCount(): number {
    return this.cache.size;
  }

  /**
   * The names chosen for a turn: every tool when they fit, else the pinned ones and the best of the
   * rest by cosine similarity to `input` (ties to the earlier tool) up to `maxPerTurn`. Rejects when
   * the embedder does (the caller offers every tool and says why). `spent` is told the tokens a
   * billing embedder charged for the call (the turn books them, issue 33).
   */
  async choose(
    tools: readonly ToolSpec[],
    input: string,
    settings: ToolSelectionSettings,
    signal?: AbortSignal,
    spent?: (spend: { embedder: string; inputTokens: number }) => void,
  ): Promise<Set<string>> {
    if (tools.length <= settings.maxPerTurn) return new Set(tools.map((t) => t.name));
    const pinned = new Set(settings.pinned.filter((name) => tools.some((t) => t.name === name)));
    const candidates = tools.filter((t) => !pinned.has(t.name));
    const slots = Math.max(0, settings.maxPerTurn - pinned.size);
    if (slots === 0) return pinned;
    const { provider, model, ref } = this.embedders.resolve(settings.embedder);
    const keys = candidates.map(
      (t) => `${ref}\u0000${createHash('sha256').update(toolText(t)).digest('base64')}`,
    );
    const missing = candidates.filter((_, i) => !this.cache.has(keys[i]));
    const missingKeys = keys.filter((k) => !this.cache.has(k));
    const { vectors, inputTokens } = await provider.embed({
      model,
      texts: [input, ...missing.map(toolText)],
      ...(signal ? { signal } : {}),
    });
    if (inputTokens > 0) spent?.({ embedder: ref, inputTokens });
    const [query, ...fresh] = vectors;
    fresh.forEach((v, i) => this.remember(missingKeys[i], v));
    const scored = candidates.map((t, i) => {
      const v = this.cache.get(keys[i]);
      if (v) this.touch(keys[i], v);
      return { name: t.name, index: i, score: v && v.length === query.length ? cosine(query, v) : -Infinity };
    });
    scored.sort((a, b) => b.score - a.score || a.index - b.index);
    return new Set([...pinned, ...scored.slice(0, slots).map((s) => s.name)]);
  }

  private remember(key: string, v: Float32Array): void {
    this.cache.set(key, v);
    while (this.cache.size > this.maxCached) this.cache.delete(this.cache.keys().next().value as string);
  }

  private touch(key: string, v: Float32Array): void {
    this.cache.delete(key);
    this.cache.set(key, v);
  }
}

/**
 * The tools a round offers: those chosen for the turn and those the turn has called, in the order
 * the turn has them (never the score's). Without a choice, all of them.
 */
export function offeredTools(
  tools: readonly ToolSpec[],
  chosen: ReadonlySet<string> | undefined,
  called: ReadonlySet<string>,
): ToolSpec[] {
  if (!chosen) return [...tools];
  return tools.filter((t) => chosen.has(t.name) || called.has(t.name));
}
