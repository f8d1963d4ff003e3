/**
 * The memory browser's pure logic (docs/adr/0050): its search as the query of
 * GET /v1/agents/:id/memory, a hit's path as a badge, and the re-embedding progress of
 * GET /v1/agents/:id/memory/embeddings as a bar. The API validates; bad filters come back as 400.
 */

export type SearchMode = 'fts' | 'vector' | 'hybrid';
export type HitPath = 'fts' | 'vector' | 'both';

export interface MemorySearchFields {
  q: string;
  /** '' : the agent's own recall mode. */
  mode: '' | SearchMode;
  kind: '' | 'fact' | 'episode' | 'note';
  /** Tags as typed: separated by commas or spaces. */
  tags: string;
}

/** Tags as the API takes them: one comma list, no blanks, no duplicates. */
export function tagsOf(s: string): string[] {
  return [
    ...new Set(
      s
        .split(/[\s,]+/)
        .map((t) => t.trim())
        .filter(Boolean),
    ),
  ];
}

/**
 * The request's query: `mode` only with a search text (the API refuses a mode without `q`), the
 * filters whenever set; blank fields left out.
 */
export function memoryQuery(f: MemorySearchFields, limit = 50): Record<string, string | number> {
  const q = f.q.trim();
  const tags = tagsOf(f.tags);
  return {
    ...(q ? { q } : {}),
    ...(q && f.mode ? { mode: f.mode } : {}),
    ...(f.kind ? { kind: f.kind } : {}),
    ...(tags.length > 0 ? { tags: tags.join(',') } : {}),
    limit,
  };
}

/** A hit's path, as its badge says it: which side of the search found it. */
export function pathLabel(path: HitPath | null | undefined): string | null {
  if (path === 'fts') return 'full-text';
  if (path === 'vector') return 'vector';
  if (path === 'both') return 'full-text + vector';
  return null;
}

export interface EmbeddingStatus {
  model: string | null;
  target: string | null;
  embedded: number;
  total: number;
  complete: boolean;
}

/**
 * What the agent page shows of the re-embedding: nothing without an embedder or once complete;
 * else the bar's value (0–100, whole) and its text.
 */
export function embeddingProgress(s: EmbeddingStatus | undefined): { percent: number; text: string } | null {
  if (!s || !s.target || s.complete) return null;
  const percent = s.total === 0 ? 100 : Math.min(100, Math.floor((s.embedded / s.total) * 100));
  return {
    percent,
    text: `Embedding memory with ${s.target}: ${s.embedded} of ${s.total} records (${percent}%)`,
  };
}
