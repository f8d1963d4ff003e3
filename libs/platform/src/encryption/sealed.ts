import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * The self-describing form of encrypted content (docs/adr/0067), one string:
 * `sbe1.<kind>.<version>.<tenant id>.<iv>.<tag>.<ciphertext>` (base64url parts), where kind is `t` (the
 * plaintext was a text) or `j` (it was a JSON value, serialised), and version is the tenant's
 * data-key version that sealed it. AES-256-GCM with the tenant id, kind and version as associated
 * data: a value moved to another tenant, or its version altered, does not open.
 * In a jsonb column the sealed value is stored as a JSON string, in a text column as the text.
 */
export const SEALED_PREFIX = 'sbe1.';
const SEALED_RE =
  /^sbe1\.([tj])\.(\d{1,9})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]*)$/;

export type SealedKind = 't' | 'j';

export interface ParsedSealed {
  kind: SealedKind;
  version: number;
  /** Whose data key sealed it (not secret: every row carries its tenant id anyway). */
  tenantId: string;
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

export class SealedValueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealedValueError';
  }
}

export function isSealed(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(SEALED_PREFIX) && SEALED_RE.test(value);
}

export function parseSealed(value: string): ParsedSealed | undefined {
  const m = SEALED_RE.exec(value);
  if (!m) return undefined;
  return {
    kind: m[1] as SealedKind,
    version: Number(m[2]),
    tenantId: m[3],
    iv: Buffer.from(m[4], 'base64url'),
    tag: Buffer.from(m[5], 'base64url'),
    ciphertext: Buffer.from(m[6], 'base64url'),
  };
}

/** The data-key version a value was sealed with, or undefined for a value that is not one. */
export function sealedVersion(value: unknown): number | undefined {
  return isSealed(value) ? Number(value.split('.')[2]) : undefined;
}

function aad(tenantId: string, kind: SealedKind, version: number) {
  return Buffer.from(`${tenantId.toLowerCase()}|${kind}|${version}`);
}

export function sealValue(
  key: Buffer,
  tenantId: string,
  version: number,
  kind: SealedKind,
  plaintext: string,
): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(tenantId, kind, version));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `${SEALED_PREFIX}${kind}.${version}.${tenantId.toLowerCase()}.${[iv, cipher.getAuthTag(), ciphertext].map((b) => b.toString('base64url')).join('.')}`;
}

/** The plaintext; throws SealedValueError when the key is wrong or the value was altered. */
export function openSealed(key: Buffer, tenantId: string, env: ParsedSealed): string {
  // The tenant it names must be the one it is opened for (and is bound as associated data).
  if (env.tenantId !== tenantId.toLowerCase())
    throw new SealedValueError('a value sealed for another tenant');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, env.iv);
    decipher.setAAD(aad(tenantId, env.kind, env.version));
    decipher.setAuthTag(env.tag);
    return Buffer.concat([decipher.update(env.ciphertext), decipher.final()]).toString('utf8');
  } catch {
    throw new SealedValueError(
      `a value sealed with data key v${env.version} does not open (altered, or not this tenant's)`,
    );
  }
}
