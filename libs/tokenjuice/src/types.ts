/** What TokenJuice recognises in a tool result (seed 000 "TokenJuice"; docs/adr/0033). */
export const CONTENT_KINDS = ['json', 'log', 'diff', 'html', 'search', 'code', 'text'] as const;
export type ContentKind = (typeof CONTENT_KINDS)[number];

/**
 * How far a turn compacts tool results: `full` (lossy compactors, the original kept for
 * `tokenjuice_retrieve`), `light` (lossless rewrites only, nothing stored), `off`.
 */
export type CompactionMode = 'full' | 'light' | 'off';

/** The agent setting: `auto` is `light` for `hint:coding` agents, `full` for the others. */
export const TOOL_RESULT_COMPRESSION = ['auto', 'full', 'light', 'off'] as const;
export type ToolResultCompression = (typeof TOOL_RESULT_COMPRESSION)[number];

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
