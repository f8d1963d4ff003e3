/**
 * An id shortened for display. Ids are UUIDv7: their first characters are a timestamp shared by
 * everything made in the same moment, so the short form is the random tail.
 */
export function shortId(id: string): string {
  return `…${id.slice(-8)}`;
}
