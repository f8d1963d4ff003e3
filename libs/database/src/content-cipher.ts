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

/**
 * The fields of journal events that carry content (docs/adr/0067): sealed one by one, so the rest
 * of an event's data (costs, ids, counts) stays plain JSON the statements can still fill in.
 */
export const CONTENT_EVENT_FIELDS = [
  'text',
  'arguments',
  'handback',
  'finalText',
  'output',
  'content',
  'question',
] as const;

/** An event's data with its content fields sealed for the tenant (the same object without a cipher). */
export async function sealEventData(tenantId: string, data: unknown): Promise<unknown> {
  if (!current || !data || typeof data !== 'object' || Array.isArray(data)) return data;
  let out: Record<string, unknown> | undefined;
  for (const field of CONTENT_EVENT_FIELDS) {
    const value = (data as Record<string, unknown>)[field];
    if (value === undefined || value === null) continue;
    out ??= { ...(data as Record<string, unknown>) };
    out[field] = await sealJson(tenantId, value);
  }
  return out ?? data;
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
