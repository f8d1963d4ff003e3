import { createHash } from 'node:crypto';

/**
 * The marker a lossy compaction leaves in the result (seed 000's `⟦tj:<hash>⟧`): the first 96 bits
 * of the original's SHA-256 in hex. Originals are stored per tenant, so the same text in two
 * tenants is two rows and a marker resolves only in its own tenant.
 */
export function markerId(original: string): string {
  return createHash('sha256').update(original, 'utf8').digest('hex').slice(0, 24);
}

export const markerText = (id: string): string => `⟦tj:${id}⟧`;

/** The id a model may write a marker as: `⟦tj:<id>⟧`, `tj:<id>` or the bare id. */
export function parseMarker(s: string): string | undefined {
  const m = /^\s*(?:⟦\s*)?(?:tj:)?([0-9a-f]{24})(?:\s*⟧)?\s*$/i.exec(s);
  return m ? m[1].toLowerCase() : undefined;
}
