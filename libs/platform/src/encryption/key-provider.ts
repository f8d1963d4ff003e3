import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * Where tenants' data keys are wrapped (docs/adr/0067): a key-encryption key (KEK) the deployment
 * holds (a local key ring) or a KMS holds for it (Vault Transit). A data key is 32 random bytes; only
 * its wrapped form is stored (`tenant_data_keys.wrapped_key`), with the provider's name and the id of
 * the KEK that wrapped it.
 */
export interface WrappedKey {
  provider: string;
  kekId: string;
  wrapped: string;
}

export interface KeyProvider {
  /** `local` | `vault-transit`: stored with every wrapped key. */
  readonly name: string;
  /** A new data key: its plaintext (kept in memory only) and its wrapped form under the current KEK. */
  generateDataKey(): Promise<{ plaintext: Buffer; wrapped: WrappedKey }>;
  wrap(plaintext: Buffer): Promise<WrappedKey>;
  /** The data key; throws when the KEK that wrapped it is not available or the wrapped form was altered. */
  unwrap(key: WrappedKey): Promise<Buffer>;
  /** The same data key wrapped under the current KEK (KEK rotation); never returns the plaintext. */
  rewrap(key: WrappedKey): Promise<WrappedKey>;
}

export class KeyProviderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyProviderError';
  }
}

const DATA_KEY_BYTES = 32;
const WRAP_AAD = Buffer.from('switchboard:data-key');

/** `id:base64-of-32-bytes` entries, comma or newline separated; the first is the current KEK. */
export function parseKeyRing(spec: string): { id: string; key: Buffer }[] {
  const entries = spec
    .split(/[,\n]/)
    .map((e) => e.trim())
    .filter((e) => e.length > 0 && !e.startsWith('#'));
  const ring = entries.map((entry) => {
    const at = entry.indexOf(':');
    if (at <= 0)
      throw new KeyProviderError(`key ring entry must be id:base64-key, got "${entry.slice(0, 20)}…"`);
    const id = entry.slice(0, at);
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(id))
      throw new KeyProviderError(`key ring id "${id}" must be [A-Za-z0-9._-]{1,64}`);
    const key = Buffer.from(entry.slice(at + 1), 'base64');
    if (key.length !== DATA_KEY_BYTES)
      throw new KeyProviderError(`key ring entry ${id} must be the base64 of 32 bytes`);
    return { id, key };
  });
  if (ring.length === 0) throw new KeyProviderError('the key ring is empty');
  const ids = new Set(ring.map((r) => r.id));
  if (ids.size !== ring.length) throw new KeyProviderError('key ring ids must be unique');
  return ring;
}

/**
 * KEKs from the environment (`ENCRYPTION_KEYS`) or a file (`ENCRYPTION_KEYS_FILE`): the first is
 * current (new and re-wrapped data keys), the others still unwrap what they wrapped. KEK rotation:
 * put the new KEK first, keep the old one, run `npm run admin -- rewrap-data-keys`, then drop the old.
 * Wrapping is AES-256-GCM: `iv.tag.ciphertext`, base64url.
 */
export class LocalKeyRing implements KeyProvider {
  readonly name = 'local';
  private readonly keys: Map<string, Buffer>;
  readonly currentId: string;

  constructor(ring: { id: string; key: Buffer }[]) {
    if (ring.length === 0) throw new KeyProviderError('the key ring is empty');
    this.keys = new Map(ring.map((r) => [r.id, r.key]));
    this.currentId = ring[0].id;
  }

  static fromSpec(spec: string): LocalKeyRing {
    return new LocalKeyRing(parseKeyRing(spec));
  }

  static fromFile(path: string): LocalKeyRing {
    return LocalKeyRing.fromSpec(readFileSync(path, 'utf8'));
  }

  async generateDataKey() {
    const plaintext = randomBytes(DATA_KEY_BYTES);
    return { plaintext, wrapped: await this.wrap(plaintext) };
  }

  async wrap(plaintext: Buffer): Promise<WrappedKey> {
    const kek = this.keys.get(this.currentId)!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', kek, iv);
    cipher.setAAD(WRAP_AAD);
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const wrapped = [iv, cipher.getAuthTag(), ciphertext].map((b) => b.toString('base64url')).join('.');
    return { provider: this.name, kekId: this.currentId, wrapped };
  }

  async unwrap(key: WrappedKey): Promise<Buffer> {
    if (key.provider !== this.name)
      throw new KeyProviderError(`a ${key.provider} key cannot be unwrapped by the local key ring`);
    const kek = this.keys.get(key.kekId);
    if (!kek) throw new KeyProviderError(`KEK ${key.kekId} is not in the key ring`);
    const [iv, tag, ciphertext] = key.wrapped.split('.').map((p) => Buffer.from(p, 'base64url'));
    try {
      const decipher = createDecipheriv('aes-256-gcm', kek, iv);
      decipher.setAAD(WRAP_AAD);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
    } catch {
      throw new KeyProviderError(
        `the data key wrapped by ${key.kekId} does not unwrap (altered or wrong KEK)`,
      );
    }
  }

  async rewrap(key: WrappedKey): Promise<WrappedKey> {
    if (key.provider === this.name && key.kekId === this.currentId) return key;
    return this.wrap(await this.unwrap(key));
  }
}

/**
 * HashiCorp Vault's Transit secrets engine as the KEK holder (its HTTP API, `X-Vault-Token`):
 * `POST /v1/<mount>/encrypt/<key>` {plaintext: base64} → {data: {ciphertext: "vault:vN:…"}},
 * `POST /v1/<mount>/decrypt/<key>` {ciphertext} → {data: {plaintext: base64}},
 * `POST /v1/<mount>/rewrap/<key>` {ciphertext} → {data: {ciphertext}} (under the key's latest version;
 * Vault never returns the plaintext for it). The data key itself is made here (32 random bytes) and
 * encrypted by Vault; its kek id is `<key>:vN`, N from the ciphertext's prefix.
 */
export class VaultTransit implements KeyProvider {
  readonly name = 'vault-transit';

  constructor(
    private readonly opts: { addr: string; token: string; key: string; mount?: string; timeoutMs?: number },
  ) {}

  async generateDataKey() {
    const plaintext = randomBytes(DATA_KEY_BYTES);
    return { plaintext, wrapped: await this.wrap(plaintext) };
  }

  async wrap(plaintext: Buffer): Promise<WrappedKey> {
    const data = await this.call('encrypt', { plaintext: plaintext.toString('base64') });
    return this.wrapped(data.ciphertext);
  }

  async unwrap(key: WrappedKey): Promise<Buffer> {
    if (key.provider !== this.name)
      throw new KeyProviderError(`a ${key.provider} key cannot be unwrapped by Vault Transit`);
    const data = await this.call('decrypt', { ciphertext: key.wrapped });
    if (typeof data.plaintext !== 'string') throw new KeyProviderError('Vault Transit answered no plaintext');
    const plaintext = Buffer.from(data.plaintext, 'base64');
    if (plaintext.length !== DATA_KEY_BYTES)
      throw new KeyProviderError('Vault Transit answered a key of the wrong size');
    return plaintext;
  }

  async rewrap(key: WrappedKey): Promise<WrappedKey> {
    if (key.provider !== this.name)
      throw new KeyProviderError(`a ${key.provider} key cannot be re-wrapped by Vault Transit`);
    const data = await this.call('rewrap', { ciphertext: key.wrapped });
    return this.wrapped(data.ciphertext);
  }

  private wrapped(ciphertext: unknown): WrappedKey {
    if (typeof ciphertext !== 'string') throw new KeyProviderError('Vault Transit answered no ciphertext');
    const version = /^vault:(v\d+):/.exec(ciphertext)?.[1];
    if (!version)
      throw new KeyProviderError('Vault Transit answered a ciphertext without its vault:vN: prefix');
    return { provider: this.name, kekId: `${this.opts.key}:${version}`, wrapped: ciphertext };
  }

  private async call(
    op: 'encrypt' | 'decrypt' | 'rewrap',
    body: Record<string, string>,
  ): Promise<Record<string, unknown>> {
    const mount = (this.opts.mount ?? 'transit').replace(/^\/+|\/+$/g, '');
    const url = `${this.opts.addr.replace(/\/+$/, '')}/v1/${mount}/${op}/${encodeURIComponent(this.opts.key)}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'X-Vault-Token': this.opts.token, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000),
      });
    } catch (err) {
      throw new KeyProviderError(`Vault Transit ${op} failed: ${(err as Error).message}`);
    }
    const text = await res.text();
    if (!res.ok) {
      let errors = text.slice(0, 200);
      try {
        errors = (JSON.parse(text) as { errors?: string[] }).errors?.join('; ') ?? errors;
      } catch {
        /* not JSON */
      }
      throw new KeyProviderError(`Vault Transit ${op} answered ${res.status}: ${errors}`);
    }
    const parsed = JSON.parse(text) as { data?: Record<string, unknown> };
    if (!parsed.data) throw new KeyProviderError(`Vault Transit ${op} answered no data`);
    return parsed.data;
  }
}
