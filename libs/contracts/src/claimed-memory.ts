/**
 * What a turn's claim reads of its agent's memory (docs/adr/0076), so that the memory context
 * sources read only what depends on the turn's input (recall's ranking) in a statement of their own.
 * Read from the agent's row itself, not from a pinned version (docs/adr/0061): recall compares with
 * the vector set of the agent's current embedder.
 */
export interface ClaimedMemory {
  /** `agents.memory` as stored (`parseMemorySettings` reads it). */
  settings: unknown;
  /** `agents.embedder`: the agent's embedder; null: its records get no vectors. */
  embedder: string | null;
  /** `agents.memory_vectors_model`: the complete vector set recall compares with; null: none. */
  vectorsModel: string | null;
  /**
   * The agent's newest preference records (tagged `preference`, docs/adr/0052), at most
   * `CLAIMED_PREFERENCES_LIMIT`, newest first, rewound turns' records left out: what the context pack
   * shows whatever the input. Their content is cut as `MemoryStore.preferences` cuts it.
   */
  preferences: ClaimedPreference[];
}

/** A preference record as the claim reads it (`MemoryStore.preferences`' row, its dates as JSON text). */
export interface ClaimedPreference {
  id: string;
  kind: string;
  title: string;
  /** Cut to `PREFERENCE_CHARS`, unless sealed (read whole, opened, then cut by the memory lib). */
  content: string;
  /** `char_length(content)`, or -1 for a sealed value (counted once opened). */
  totalChars: number;
  provenance: unknown;
  tags: string[];
  createdAt: string;
  updatedAt: string;
}

/** Preferences the claim reads at most: the context pack's default (`PACK_PREFERENCES_LIMIT`). */
export const CLAIMED_PREFERENCES_LIMIT = 5;

/** Characters of a preference read (its excerpt is shorter). */
export const PREFERENCE_CHARS = 1000;
