/**
 * Per-tenant encryption of content at rest (docs/adr/0067), as the store sees it: the writers of
 * content seal it for its tenant, and every read through SqlDb opens what it finds sealed. The cipher
 * itself (TenantCipher, libs/platform) is set once per process, like the prepared-statement switch
 * (setPreparedStatements), and only when a key provider is configured: without one nothing here
 * costs a query or a walk of the rows.
 */
export interface ContentCipher {
  /** The value as stored for the tenant: a sealed string when its mode is on or strict, else the value. */
  sealJson<T>(tenantId: string, value: T): Promise<T | string>;
  sealText(tenantId: string, text: string): Promise<string>;
  /** Every sealed value inside `value` opened (with the key of the tenant each names). */
  openAny(value: unknown): Promise<unknown>;
  mode(tenantId: string): Promise<'off' | 'on' | 'strict'>;
}

let current: ContentCipher | undefined;

export function setContentCipher(cipher: ContentCipher | undefined): void {
  current = cipher;
}

export function contentCipher(): ContentCipher | undefined {
  return current;
}

/** `value` sealed for the tenant when its mode says so (a JSON column). */
export async function sealJson<T>(tenantId: string, value: T): Promise<T | string> {
  return current ? current.sealJson(tenantId, value) : value;
}

/** `text` sealed for the tenant when its mode says so (a text column). */
export async function sealText<T extends string | null | undefined>(tenantId: string, text: T): Promise<T> {
  if (!current || typeof text !== 'string') return text;
  return (await current.sealText(tenantId, text)) as T;
}

/** Whether the tenant's mode is strict: no full-text or vector index derived from its content. */
export async function isStrict(tenantId: string): Promise<boolean> {
  return current ? (await current.mode(tenantId)) === 'strict' : false;
}

const PREFIX = 'sbe1.';

/** Whether anything inside `value` looks sealed (a cheap synchronous walk). */
export function holdsSealed(value: unknown): boolean {
  if (typeof value === 'string') return value.startsWith(PREFIX);
  if (value === null || typeof value !== 'object' || value instanceof Date || Buffer.isBuffer(value))
    return false;
  if (Array.isArray(value)) return value.some(holdsSealed);
  for (const v of Object.values(value)) if (holdsSealed(v)) return true;
  return false;
}

/** Rows as read, every sealed value opened; the same array when there is no cipher or nothing sealed. */
export async function openRows<R>(rows: R[]): Promise<R[]> {
  if (!current || !holdsSealed(rows)) return rows;
  return (await current.openAny(rows)) as R[];
}

/** One value opened (Prisma's reads, which do not go through SqlDb). */
export async function openStored<T>(value: T): Promise<T> {
  if (!current || !holdsSealed(value)) return value;
  return (await current.openAny(value)) as T;
}
