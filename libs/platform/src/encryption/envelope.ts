import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * The self-describing form of encrypted content (docs/adr/0067), one string:
 * `sbe1.<kind>.<version>.<iv>.<tag>.<ciphertext>` (base64url parts), where kind is `t` (the
 * plaintext was a text) or `j` (it was a JSON value, serialised), and version is the tenant's
 * data-key version that sealed it. AES-256-GCM with the tenant id, kind and version as associated
 * data: an envelope moved to another tenant, or its version altered, does not open.
 * In a jsonb column the envelope is stored as a JSON string, in a text column as the text.
 */
export const ENVELOPE_PREFIX = 'sbe1.';
const ENVELOPE_RE = /^sbe1\.([tj])\.(\d{1,9})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]*)$/;

export type EnvelopeKind = 't' | 'j';

export interface ParsedEnvelope {
  kind: EnvelopeKind;
  version: number;
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

export class EnvelopeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvelopeError';
  }
}

export function isEnvelope(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(ENVELOPE_PREFIX) && ENVELOPE_RE.test(value);
}

export function parseEnvelope(value: string): ParsedEnvelope | undefined {
  const m = ENVELOPE_RE.exec(value);
  if (!m) return undefined;
  return {
    kind: m[1] as EnvelopeKind,
    version: Number(m[2]),
    iv: Buffer.from(m[3], 'base64url'),
    tag: Buffer.from(m[4], 'base64url'),
    ciphertext: Buffer.from(m[5], 'base64url'),
  };
}

/** The data-key version an envelope was sealed with, or undefined for a value that is not one. */
export function envelopeVersion(value: unknown): number | undefined {
  return isEnvelope(value) ? Number(value.split('.')[2]) : undefined;
}

function aad(tenantId: string, kind: EnvelopeKind, version: number) {
  return Buffer.from(`${tenantId}|${kind}|${version}`);
}

export function sealEnvelope(key: Buffer, tenantId: string, version: number, kind: EnvelopeKind, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(tenantId, kind, version));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `${ENVELOPE_PREFIX}${kind}.${version}.${[iv, cipher.getAuthTag(), ciphertext].map((b) => b.toString('base64url')).join('.')}`;
}

/** The plaintext; throws EnvelopeError when the key is wrong or the envelope was altered. */
export function openEnvelope(key: Buffer, tenantId: string, env: ParsedEnvelope): string {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, env.iv);
    decipher.setAAD(aad(tenantId, env.kind, env.version));
    decipher.setAuthTag(env.tag);
    return Buffer.concat([decipher.update(env.ciphertext), decipher.final()]).toString('utf8');
  } catch {
    throw new EnvelopeError(`an envelope of data key v${env.version} does not open (altered, or not this tenant's)`);
  }
}
