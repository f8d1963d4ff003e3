/**
 * `source_ref` is an opaque handle (seed 002): `mem_` and the record id in base64url. It names a
 * record, never grants access to it: every lookup is also filtered by the caller's tenant and agent,
 * so a ref copied to another agent or tenant resolves to nothing.
 */
const PREFIX = 'mem_';
const SHAPE = /^mem_[A-Za-z0-9_-]{22}$/;

export function encodeSourceRef(id: string): string {
  return PREFIX + Buffer.from(id.replace(/-/g, ''), 'hex').toString('base64url');
}

/** The record id a ref names, or null for anything that is not a ref this store made. */
export function decodeSourceRef(ref: string): string | null {
  if (!SHAPE.test(ref)) return null;
  const body = ref.slice(PREFIX.length);
  const bytes = Buffer.from(body, 'base64url');
  // Only the canonical encoding: a ref differing in its unused low bits does not alias a record.
  if (bytes.length !== 16 || bytes.toString('base64url') !== body) return null;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
