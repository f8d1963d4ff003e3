/** What TokenJuice recognises in a tool result (seed 000 "TokenJuice"; docs/adr/0033). */
export const CONTENT_KINDS = ['json', 'log', 'diff', 'html', 'search', 'code', 'text'] as const;
export type ContentKind = (typeof CONTENT_KINDS)[number];

/**
 * How far a turn compacts tool results: `full` (lossy compactors, the original kept for
 * `tokenjuice_retrieve`), `light` (lossless rewrites only, nothing stored), `off`.
 */
export type CompactionMode = 'full' | 'light' | 'off';

/** The read-only tool that returns a lossy compaction's original (seed 000 "CCR"). */
export const TOKENJUICE_RETRIEVE_TOOL = 'tokenjuice_retrieve';

/**
 * An agent's `toolResultCompression` as a turn's mode: `auto` (or none) is `light` for an agent whose
 * model is `hint:coding` (coding agents keep raw build, test, diff and search text unless a rewrite
 * is lossless; seed 000) and `full` for the others.
 */
export function resolveCompression(setting: string | undefined, agentModel: string): CompactionMode {
  if (setting === 'full' || setting === 'light' || setting === 'off') return setting;
  return agentModel === 'hint:coding' ? 'light' : 'full';
}

/**
 * The tools a turn offers with TokenJuice: in `full` mode an agent that has tools also gets
 * `tokenjuice_retrieve` (when the deployment registers it), appended so the offered list's prefix
 * stays as it was.
 */
export function withRetrieveTool(
  offered: string[],
  mode: CompactionMode,
  registered: readonly string[],
): string[] {
  if (mode !== 'full' || offered.length === 0 || offered.includes(TOKENJUICE_RETRIEVE_TOOL)) return offered;
  return registered.includes(TOKENJUICE_RETRIEVE_TOOL) ? [...offered, TOKENJUICE_RETRIEVE_TOOL] : offered;
}

/** What the caller knows besides the bytes: the tool, its arguments, a content type. */
export interface KindHint {
  tool?: string;
  args?: unknown;
  contentType?: string;
}

/** One compactor's answer: the text the model sees instead, and whether anything was dropped. */
export interface Compacted {
  text: string;
  /** Something of the input is not in `text`: the original must be kept to be retrievable. */
  lossy: boolean;
}

/** A compactor of one kind; `undefined` when it has nothing to offer in this mode. */
export type Compactor = (text: string, mode: 'full' | 'light', hint: KindHint) => Compacted | undefined;
