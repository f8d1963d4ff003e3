export const MEMORY_KINDS = ['fact', 'episode', 'note'] as const;
export type MemoryKind = (typeof MEMORY_KINDS)[number];

/** Where a record came from, kept with it and shown with every hit and document. */
export interface MemoryProvenance {
  source: 'archivist' | 'episodic' | 'api';
  turnId?: string;
  sessionId?: string;
  messageSeqs?: number[];
  hook?: string;
  model?: string;
}

export interface MemoryWrite {
  tenantId: string;
  agentId: string;
  kind: MemoryKind;
  title: string;
  content: string;
  /** One record per (agent, dedupe key): writing the same key again writes nothing. */
  dedupeKey: string;
  provenance: MemoryProvenance;
  /** Tags to filter on (set over the API); none when absent. */
  tags?: string[];
}

/** Which search found a hit (docs/adr/0050). */
export type MemoryHitPath = 'fts' | 'vector' | 'both';

export interface MemoryHit {
  sourceRef: string;
  kind: MemoryKind;
  title: string;
  snippet: string;
  score: number;
  updatedAt: string;
  provenance: MemoryProvenance;
  totalChars: number;
  createdAt: string;
  tags: string[];
  path: MemoryHitPath;
}

export interface MemoryDocument {
  sourceRef: string;
  kind: MemoryKind;
  title: string;
  /** The exact original text, cut to `maxChars` characters. */
  content: string;
  truncated: boolean;
  totalChars: number;
  provenance: MemoryProvenance;
  tags: string[];
  createdAt: string;
  updatedAt: string;
}

/** A record in a listing: no full content, a short preview. */
export interface MemoryItem {
  sourceRef: string;
  kind: MemoryKind;
  title: string;
  preview: string;
  totalChars: number;
  provenance: MemoryProvenance;
  tags: string[];
  createdAt: string;
  updatedAt: string;
}

/** Bounds (seed 002): `memory_get` returns 12,000 characters unless asked, at most 50,000. */
export const MEMORY_GET_DEFAULT_CHARS = 12_000;
export const MEMORY_GET_MAX_CHARS = 50_000;
/** A record's content is at most this long (what one `memory_get` can return whole). */
export const MEMORY_CONTENT_MAX_CHARS = 50_000;
export const MEMORY_TITLE_MAX_CHARS = 200;
export const MEMORY_DEDUPE_KEY_MAX_CHARS = 200;
export const MEMORY_SEARCH_MAX_LIMIT = 50;
export const MEMORY_TAG_PATTERN = /^[\p{L}\p{N}_.:-]{1,50}$/u;
export const MEMORY_MAX_TAGS = 20;
