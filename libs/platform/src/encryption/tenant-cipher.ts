import type { Config } from '@switchboard/config';
import type { Db } from '@switchboard/database';
import { recordAudit } from '@switchboard/store';
import {
  isSealed,
  openSealed,
  parseSealed,
  sealedVersion,
  sealValue,
  SealedValueError,
  type ParsedSealed,
} from './sealed';
import { KeyProvider, LocalKeyRing, VaultTransit } from './key-provider';

/** A tenant's `settings.encryption.mode` (docs/adr/0067). */
export const ENCRYPTION_MODES = ['off', 'on', 'strict'] as const;
export type EncryptionMode = (typeof ENCRYPTION_MODES)[number];

/** One version of a tenant's data key as the operator sees it: never key material. */
export interface DataKeyInfo {
  version: number;
  state: 'active' | 'retired' | 'destroyed';
  provider: string;
  kekId: string;
  createdAt: Date;
}

interface KeyRow {
  version: number;
  provider: string;
  kek_id: string;
  wrapped_key: string;
  state: DataKeyInfo['state'];
  created_at: Date;
}

export interface TenantCipherOptions {
  /** Unwrapped data keys kept in memory (default 1000), each for at most `keyTtlMs` (default 10 min). */
  maxKeys?: number;
  keyTtlMs?: number;
  /** How long a tenant's mode is trusted before it is read again (default 5 s). */
  modeTtlMs?: number;
  /** The mode of a tenant whose settings name none (ENCRYPTION_DEFAULT_MODE). */
  defaultMode?: EncryptionMode;
  now?: () => number;
}

/** A small LRU with a TTL: Map keeps insertion order, a hit re-inserts. */
class Lru<V> {
  private readonly map = new Map<string, { value: V; expires: number }>();
  constructor(
    private readonly max: number,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}
  get(key: string): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    this.map.delete(key);
    if (hit.expires <= this.now()) return undefined;
    this.map.set(key, hit);
    return hit.value;
  }
  set(key: string, value: V) {
    this.map.delete(key);
    this.map.set(key, { value, expires: this.now() + this.ttlMs });
    while (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }
  deleteWhere(pred: (key: string) => boolean) {
    for (const key of [...this.map.keys()]) if (pred(key)) this.map.delete(key);
  }
  get size() {
    return this.map.size;
  }
}

export class EncryptionUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EncryptionUnavailableError';
  }
}

/**
 * Per-tenant encryption of content at rest (docs/adr/0067). Each tenant has data keys
 * (`tenant_data_keys`, one active version, older ones retired) wrapped by the KeyProvider; content is
 * sealed as self-describing sealed values (sealed.ts) with the active version and opened with whichever
 * version sealed it. Without a provider every tenant is `off` and nothing is queried.
 */
export class TenantCipher {
  private readonly keys: Lru<Buffer>;
  private readonly modes: Lru<EncryptionMode>;
  private readonly active: Lru<number>;
  private readonly defaultMode: EncryptionMode;
  private readonly now: () => number;

  constructor(
    private readonly db: Db,
    readonly provider: KeyProvider | undefined,
    options: TenantCipherOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.keys = new Lru(options.maxKeys ?? 1000, options.keyTtlMs ?? 600_000, this.now);
    this.modes = new Lru(10_000, options.modeTtlMs ?? 5_000, this.now);
    // Another process' rotation is seen within the same few seconds.
    this.active = new Lru(10_000, options.modeTtlMs ?? 5_000, this.now);
    this.defaultMode = options.defaultMode ?? 'off';
  }

  /** Whether a KeyProvider is configured (else `on`/`strict` cannot be set). */
  get available(): boolean {
    return this.provider !== undefined;
  }

  /** The mode a tenant's settings name, else the deployment default; `off` without a provider. */
  modeFromSettings(settings: unknown): EncryptionMode {
    if (!this.provider) return 'off';
    const mode = (settings as { encryption?: { mode?: unknown } } | null)?.encryption?.mode;
    return ENCRYPTION_MODES.includes(mode as EncryptionMode) ? (mode as EncryptionMode) : this.defaultMode;
  }

  /** The tenant's mode (cached a few seconds); no query without a provider. */
  async mode(tenantId: string): Promise<EncryptionMode> {
    if (!this.provider) return 'off';
    const hit = this.modes.get(tenantId);
    if (hit) return hit;
    const rows = await this.db.$queryRaw<
      { settings: unknown }[]
    >`SELECT settings FROM tenants WHERE id = ${tenantId}::uuid`;
    const mode = this.modeFromSettings(rows[0]?.settings);
    this.modes.set(tenantId, mode);
    return mode;
  }

  /** Forget a tenant's cached mode (its settings changed in this process). */
  forgetMode(tenantId: string) {
    this.modes.deleteWhere((k) => k === tenantId);
  }

  /** A JSON value as stored for the tenant: a sealed string when its mode is on or strict, else the value. */
  async sealJson<T>(tenantId: string, value: T): Promise<T | string> {
    if (value === null || value === undefined) return value;
    if ((await this.mode(tenantId)) === 'off') return value;
    const { version, key } = await this.activeKey(tenantId);
    return sealValue(key, tenantId, version, 'j', JSON.stringify(value));
  }

  /**
   * A value sealed under the tenant's active version whatever its mode (re-encryption of content that
   * is sealed already): a text for `t`, a JSON value for `j`.
   */
  async sealActive(tenantId: string, kind: 't' | 'j', value: unknown): Promise<string> {
    const { version, key } = await this.activeKey(tenantId);
    return sealValue(key, tenantId, version, kind, kind === 't' ? String(value) : JSON.stringify(value));
  }

  /** A text as stored for the tenant. */
  async sealText(tenantId: string, text: string): Promise<string>;
  async sealText(tenantId: string, text: string | null | undefined): Promise<string | null | undefined>;
  async sealText(tenantId: string, text: string | null | undefined): Promise<string | null | undefined> {
    // An empty text holds nothing: stored as is, as the writers in SQL store it (a cancelled or
    // interjected turn's final text, a cancelled task's output), so a column has one rule (docs/adr/0067).
    if (text === null || text === undefined || text === '') return text;
    if ((await this.mode(tenantId)) === 'off') return text;
    const { version, key } = await this.activeKey(tenantId);
    return sealValue(key, tenantId, version, 't', text);
  }

  /**
   * A stored value opened: a sealed value becomes its plaintext (parsed for a JSON one), anything else
   * is itself. A value sealed for another tenant is refused (SealedValueError).
   */
  async open(tenantId: string, value: unknown): Promise<unknown> {
    if (!isSealed(value)) return value;
    const env = parseSealed(value)!;
    if (env.tenantId !== tenantId.toLowerCase())
      throw new SealedValueError('a value sealed for another tenant');
    return this.openParsed(env);
  }

  /**
   * Every sealed value inside `value` opened with the data key of the tenant it names (the data
   * layer's reads, which see rows of one tenant at a time but not which); the same value when it holds none.
   */
  async openAny(value: unknown): Promise<unknown> {
    return this.walk(value, (sealed) => this.openParsed(parseSealed(sealed)!));
  }

  private async openParsed(env: ParsedSealed): Promise<unknown> {
    const plaintext = openSealed(await this.keyOf(env.tenantId, env.version), env.tenantId, env);
    return env.kind === 'j' ? JSON.parse(plaintext) : plaintext;
  }

  /** `open` for a text column. */
  async openText(tenantId: string, value: string): Promise<string>;
  async openText(tenantId: string, value: string | null): Promise<string | null>;
  async openText(tenantId: string, value: string | null): Promise<string | null> {
    if (value === null) return value;
    const opened = await this.open(tenantId, value);
    return typeof opened === 'string' ? opened : JSON.stringify(opened);
  }

  /**
   * `value` with every sealed value inside it (at any depth, in objects, arrays or as the value itself)
   * replaced by its plaintext; the same value (not a copy) when it holds none.
   */
  async openDeep(tenantId: string, value: unknown): Promise<unknown> {
    return this.walk(value, (sealed) => this.open(tenantId, sealed));
  }

  private async walk(value: unknown, open: (sealed: string) => Promise<unknown>): Promise<unknown> {
    if (typeof value === 'string') return isSealed(value) ? open(value) : value;
    if (value === null || typeof value !== 'object' || value instanceof Date || Buffer.isBuffer(value))
      return value;
    if (Array.isArray(value)) {
      let changed = false;
      const out: unknown[] = [];
      for (const item of value) {
        const opened = await this.walk(item, open);
        if (opened !== item) changed = true;
        out.push(opened);
      }
      return changed ? out : value;
    }
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const opened = await this.walk(v, open);
      if (opened !== v) changed = true;
      out[k] = opened;
    }
    return changed ? out : value;
  }

  /** Whether a stored value is sealed under an older version than the tenant's active one (lazy re-encryption). */
  async isStale(tenantId: string, value: unknown): Promise<boolean> {
    const version = sealedVersion(value);
    if (version === undefined) return false;
    return version !== (await this.activeKey(tenantId)).version;
  }

  /** A sealed value re-sealed under the active version (same kind); anything else as it is. */
  async reseal(tenantId: string, value: unknown): Promise<unknown> {
    if (!isSealed(value)) return value;
    const env = parseSealed(value)!;
    if (env.tenantId !== tenantId.toLowerCase())
      throw new SealedValueError('a value sealed for another tenant');
    const plaintext = openSealed(await this.keyOf(tenantId, env.version), tenantId, env);
    const { version, key } = await this.activeKey(tenantId);
    if (version === env.version) return value;
    return sealValue(key, tenantId, version, env.kind, plaintext);
  }

  /** The tenant's active version, made (version 1) on first use. */
  async activeVersion(tenantId: string): Promise<number> {
    return (await this.activeKey(tenantId)).version;
  }

  /** Every version of the tenant's data key, newest first: never key material. */
  async listKeys(tenantId: string): Promise<DataKeyInfo[]> {
    const rows = await this.db.$queryRaw<KeyRow[]>`
      SELECT version, provider, kek_id, wrapped_key, state, created_at FROM tenant_data_keys
       WHERE tenant_id = ${tenantId}::uuid ORDER BY version DESC`;
    return rows.map((r) => ({
      version: r.version,
      state: r.state,
      provider: r.provider,
      kekId: r.kek_id,
      createdAt: r.created_at,
    }));
  }

  /**
   * A new data-key version, active at once (the previous active one is retired and still opens what
   * it sealed). Serialised per tenant by a transaction-scoped advisory lock. Returns the new version.
   */
  async rotate(tenantId: string, actor = 'system'): Promise<{ version: number; previous: number | null }> {
    const provider = this.requireProvider();
    const { plaintext, wrapped } = await provider.generateDataKey();
    const result = await this.db.$transaction(async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('tenant_data_keys:' || ${tenantId}))`;
      const prev = await tx.$queryRaw<{ version: number }[]>`
        UPDATE tenant_data_keys SET state = 'retired' WHERE tenant_id = ${tenantId}::uuid AND state = 'active' RETURNING version`;
      const [{ version }] = await tx.$queryRaw<{ version: number }[]>`
        INSERT INTO tenant_data_keys (tenant_id, version, provider, kek_id, wrapped_key, state)
        SELECT ${tenantId}::uuid, COALESCE(MAX(version), 0) + 1, ${wrapped.provider}, ${wrapped.kekId}, ${wrapped.wrapped}, 'active'
          FROM tenant_data_keys WHERE tenant_id = ${tenantId}::uuid
        RETURNING version`;
      const previous = prev[0]?.version ?? null;
      await recordAudit(tx, {
        tenantId,
        actor,
        action: 'tenant.data_key_rotated',
        targetType: 'tenant',
        targetId: tenantId,
        details: { kind: 'data_key', version, previous, provider: wrapped.provider, kekId: wrapped.kekId },
      });
      return { version, previous };
    });
    this.keys.set(`${tenantId}:${result.version}`, plaintext);
    this.active.set(tenantId, result.version);
    return result;
  }

  /**
   * KEK rotation: every data key that is not destroyed re-wrapped under the provider's current KEK, at
   * once (the content is not touched). Returns how many rows changed.
   */
  async rewrapAll(batch = 500, actor = 'operator'): Promise<{ rewrapped: number; unchanged: number }> {
    const provider = this.requireProvider();
    const perTenant = new Map<string, { versions: number[]; kekId: string }>();
    let rewrapped = 0;
    let unchanged = 0;
    let after: { tenant: string; version: number } = {
      tenant: '00000000-0000-0000-0000-000000000000',
      version: 0,
    };
    for (;;) {
      const rows = await this.db.$queryRaw<(KeyRow & { tenant_id: string })[]>`
        SELECT tenant_id::text, version, provider, kek_id, wrapped_key, state, created_at FROM tenant_data_keys
         WHERE state <> 'destroyed' AND (tenant_id, version) > (${after.tenant}::uuid, ${after.version})
         ORDER BY tenant_id, version LIMIT ${batch}`;
      if (rows.length === 0) break;
      for (const row of rows) {
        const next = await provider.rewrap({
          provider: row.provider,
          kekId: row.kek_id,
          wrapped: row.wrapped_key,
        });
        if (next.wrapped === row.wrapped_key) {
          unchanged++;
          continue;
        }
        await this.db.$executeRaw`
          UPDATE tenant_data_keys SET provider = ${next.provider}, kek_id = ${next.kekId}, wrapped_key = ${next.wrapped}
           WHERE tenant_id = ${row.tenant_id}::uuid AND version = ${row.version} AND wrapped_key = ${row.wrapped_key}`;
        const seen = perTenant.get(row.tenant_id) ?? { versions: [], kekId: next.kekId };
        seen.versions.push(row.version);
        perTenant.set(row.tenant_id, seen);
        rewrapped++;
      }
      const last = rows[rows.length - 1];
      after = { tenant: last.tenant_id, version: last.version };
    }
    // One entry per tenant whose keys were re-wrapped: which versions, under which KEK.
    for (const [tenantId, { versions, kekId }] of perTenant) {
      await this.db.$transaction((tx) =>
        recordAudit(tx, {
          tenantId,
          actor,
          action: 'tenant.data_key_rotated',
          targetType: 'tenant',
          targetId: tenantId,
          details: { kind: 'kek', versions, provider: provider.name, kekId },
        }),
      );
    }
    return { rewrapped, unchanged };
  }

  /**
   * Crypto-shredding: every version of the tenant's data key is destroyed (its wrapped key erased, state
   * `destroyed`) and dropped from this process' cache, so content sealed under it can no longer be
   * opened anywhere, including in backups taken before. Other processes drop their cached copy within
   * the key TTL (TenantCipherOptions.keyTtlMs).
   */
  async destroyKeys(tenantId: string): Promise<void> {
    await this.db.$executeRaw`
      UPDATE tenant_data_keys SET state = 'destroyed', wrapped_key = '' WHERE tenant_id = ${tenantId}::uuid`;
    this.keys.deleteWhere((k) => k.startsWith(`${tenantId}:`));
    this.active.deleteWhere((k) => k === tenantId);
  }

  private requireProvider(): KeyProvider {
    if (!this.provider)
      throw new EncryptionUnavailableError(
        'no key provider is configured (ENCRYPTION_KEYS, ENCRYPTION_KEYS_FILE or VAULT_*)',
      );
    return this.provider;
  }

  private async activeKey(tenantId: string): Promise<{ version: number; key: Buffer }> {
    const known = this.active.get(tenantId);
    if (known !== undefined) {
      const key = this.keys.get(`${tenantId}:${known}`);
      if (key) return { version: known, key };
    }
    const rows = await this.db.$queryRaw<KeyRow[]>`
      SELECT version, provider, kek_id, wrapped_key, state, created_at FROM tenant_data_keys
       WHERE tenant_id = ${tenantId}::uuid AND state = 'active'`;
    if (rows.length === 0) {
      const destroyed = await this.db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM tenant_data_keys WHERE tenant_id = ${tenantId}::uuid AND state = 'destroyed'`;
      if (destroyed[0].n > 0)
        throw new EncryptionUnavailableError(`the data keys of tenant ${tenantId} are destroyed`);
      await this.rotateIfNone(tenantId);
      return this.activeKey(tenantId);
    }
    const key = await this.unwrapRow(tenantId, rows[0]);
    this.active.set(tenantId, rows[0].version);
    return { version: rows[0].version, key };
  }

  /** The first version, unless another process made it meanwhile. */
  private async rotateIfNone(tenantId: string) {
    const provider = this.requireProvider();
    const { wrapped } = await provider.generateDataKey();
    await this.db.$executeRaw`
      INSERT INTO tenant_data_keys (tenant_id, version, provider, kek_id, wrapped_key, state)
      VALUES (${tenantId}::uuid, 1, ${wrapped.provider}, ${wrapped.kekId}, ${wrapped.wrapped}, 'active')
      ON CONFLICT DO NOTHING`;
  }

  private async keyOf(tenantId: string, version: number): Promise<Buffer> {
    const cached = this.keys.get(`${tenantId}:${version}`);
    if (cached) return cached;
    const rows = await this.db.$queryRaw<KeyRow[]>`
      SELECT version, provider, kek_id, wrapped_key, state, created_at FROM tenant_data_keys
       WHERE tenant_id = ${tenantId}::uuid AND version = ${version}`;
    if (rows.length === 0) throw new SealedValueError(`tenant ${tenantId} has no data key v${version}`);
    return this.unwrapRow(tenantId, rows[0]);
  }

  private async unwrapRow(tenantId: string, row: KeyRow): Promise<Buffer> {
    if (row.state === 'destroyed')
      throw new EncryptionUnavailableError(`data key v${row.version} of tenant ${tenantId} is destroyed`);
    const key = await this.requireProvider().unwrap({
      provider: row.provider,
      kekId: row.kek_id,
      wrapped: row.wrapped_key,
    });
    this.keys.set(`${tenantId}:${row.version}`, key);
    return key;
  }
}

/** The configured KeyProvider: Vault Transit when VAULT_ADDR is set, else the local key ring, else none. */
export function keyProviderFromConfig(config: Config): KeyProvider | undefined {
  if (config.VAULT_ADDR && config.VAULT_TOKEN && config.VAULT_TRANSIT_KEY) {
    return new VaultTransit({
      addr: config.VAULT_ADDR,
      token: config.VAULT_TOKEN,
      key: config.VAULT_TRANSIT_KEY,
      mount: config.VAULT_TRANSIT_MOUNT,
    });
  }
  if (config.ENCRYPTION_KEYS) return LocalKeyRing.fromSpec(config.ENCRYPTION_KEYS);
  if (config.ENCRYPTION_KEYS_FILE) return LocalKeyRing.fromFile(config.ENCRYPTION_KEYS_FILE);
  return undefined;
}

export function tenantCipherFromConfig(
  config: Config,
  db: Db,
  options: TenantCipherOptions = {},
): TenantCipher {
  return new TenantCipher(db, keyProviderFromConfig(config), {
    defaultMode: config.ENCRYPTION_DEFAULT_MODE,
    ...options,
  });
}
