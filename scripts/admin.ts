/**
 * The admin CLI: the operator's API (`/v1/admin/...`) from a shell, on the same repositories and
 * presenters, writing audit entries as `operator` (docs/adr/0030).
 *   npm run admin -- create-tenant <name>
 *   npm run admin -- create-key <tenantId> [name]
 *   npm run admin -- revoke-key <keyId>
 *   npm run admin -- list-tenants [--json]
 *   npm run admin -- show-tenant <tenantId>
 *   npm run admin -- set-tenant <tenantId> [--max-concurrent-turns N|default] [--share W|default]
 *                                          [--daily-spend-limit-usd X|none] [--rate-limit <bucket>=N|default]...
 *   npm run admin -- pause-tenant <tenantId> [--reason <text>]
 *   npm run admin -- resume-tenant <tenantId>
 *   npm run admin -- audit [--tenant <tenantId>] [--action <action>] [--limit N] [--json]
 *   npm run admin -- rotate-data-key <tenantId>   (a new data-key version: docs/adr/0067)
 *   npm run admin -- rewrap-data-keys             (KEK rotation: every data key re-wrapped under the current KEK)
 *   npm run admin -- tenant import <archive.jsonl[.gz]> [--allow-plaintext]
 *                    (an export, into this database, sealed for its tenant's encryption mode: docs/adr/0068)
 *   npm run admin -- eval run --dataset <id|name> --agent <id|name> --version N [--version M]...
 *                             --min-score X [--timeout-s 600]   (over the HTTP API: docs/adr/0063)
 */
import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { Queue } from 'bullmq';
import type { z } from 'zod';
import { loadConfig, type Config } from '@switchboard/config';
import {
  AppError,
  AuditAction,
  isUuid,
  QueueName,
  RateLimitOverrides,
  UpdateRateLimitsRequest,
  UpdateTenantRequest,
  type OperatorTenantResponse,
} from '@switchboard/contracts';
import { createPrisma, poolOf, type Db } from '@switchboard/database';
import { createLogger } from '@switchboard/observability';
import { closeQueue, createRedis, redisTarget } from '@switchboard/queue';
import {
  ApiKeysRepository,
  AuditLogRepository,
  BadArchive,
  ImportRefused,
  importTenant,
  type ImportSealing,
  OPERATOR_ACTOR,
  setPreparedStatements,
  sqlDbFor,
  TenantsRepository,
  TurnStore,
} from '@switchboard/store';
import { TenantPause } from '@switchboard/turns';
import {
  ENCRYPTION_MODES,
  keyProviderFromConfig,
  sealValue,
  tenantCipherFromConfig,
  type EncryptionMode,
  type TenantCipher,
} from '@switchboard/platform';
import { createTenant, operatorTenant } from '../apps/gateway/src/api/admin.controller';
import { generateApiKey } from '../apps/gateway/src/platform/auth/keys';
import { presentApiKey, presentAuditEvent, presentOperatorTenant } from '../apps/gateway/src/api/presenters';
import { EVAL_USAGE, EvalUsageError, runEval } from './eval-run';

const USAGE = `usage: npm run admin -- <command>
  create-tenant <name>
  create-key <tenantId> [name]
  revoke-key <keyId>
  list-tenants [--json]
  show-tenant <tenantId>
  set-tenant <tenantId> [--max-concurrent-turns N|default] [--share W|default]
                        [--daily-spend-limit-usd X|none] [--rate-limit <bucket>=N|default]...
  pause-tenant <tenantId> [--reason <text>]
  resume-tenant <tenantId>
  audit [--tenant <tenantId>] [--action <action>] [--limit N] [--json]
  rotate-data-key <tenantId>
  rewrap-data-keys
  tenant import <archive.jsonl[.gz]> [--allow-plaintext]
${EVAL_USAGE}`;

/** A command line's words before any flag, and each `--flag value` (a flag may repeat). */
interface Parsed {
  positional: string[];
  flags: Map<string, string[]>;
  switches: Set<string>;
}

class UsageError extends Error {}

/** Splits the arguments; a flag outside `valued`/`boolean` is a usage error, as is a flag without its value. */
function parseArgs(args: string[], valued: string[], boolean: string[] = []): Parsed {
  const parsed: Parsed = { positional: [], flags: new Map(), switches: new Set() };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith('--')) {
      parsed.positional.push(arg);
      continue;
    }
    const name = arg.slice(2);
    if (boolean.includes(name)) {
      parsed.switches.add(name);
      continue;
    }
    if (!valued.includes(name)) throw new UsageError(`unknown option ${arg}`);
    const value = args[++i];
    if (value === undefined) throw new UsageError(`${arg} needs a value`);
    parsed.flags.set(name, [...(parsed.flags.get(name) ?? []), value]);
  }
  return parsed;
}

/** A number, or `null` for one of the words that reset a setting. */
function numberOr(value: string, resets: string[]): number | null {
  if (resets.includes(value)) return null;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`not a number: ${value}`);
  return n;
}

/** Validates with the API's own schema; its issues become a usage error. */
function validated<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  throw new UsageError(r.error.issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; '));
}

function tenantIdOf(p: Parsed, command: string): string {
  const [id] = p.positional;
  if (!id || !isUuid(id) || p.positional.length > 1) throw new UsageError(`${command} needs one tenant id`);
  return id;
}

const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));

function tenantLine(t: OperatorTenantResponse): string {
  return [
    t.id,
    t.name.padEnd(20).slice(0, 20),
    (t.paused ? 'paused' : 'running').padEnd(7),
    `${t.turns.running}/${t.turns.queued}/${t.turns.waiting}`.padEnd(12),
    `$${t.spentTodayUsd}`.padEnd(14),
    `max=${t.maxConcurrentTurns ?? 'default'}`.padEnd(12),
    `share=${t.share}`.padEnd(10),
    `cap=${t.dailySpendLimitUsd === null ? 'none' : `$${t.dailySpendLimitUsd}`}`,
  ].join('  ');
}

/** The turns queue and a resume on it; closed whatever happens. */
async function withTenantPause<T>(db: Db, fn: (pauses: TenantPause) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const redis = createRedis(redisTarget(config));
  redis.on('error', () => undefined);
  const turns = new Queue(QueueName.Turns, { connection: redis, prefix: config.QUEUE_PREFIX });
  // Log lines go to stderr: stdout carries the command's answer.
  const logger = createLogger({ level: config.LOG_LEVEL, service: 'admin-cli', destination: process.stderr });
  try {
    return await fn(
      new TenantPause(new TenantsRepository(db), new TurnStore(sqlDbFor(poolOf(db), 'admin')), turns, logger),
    );
  } finally {
    await closeQueue(turns);
    redis.disconnect();
  }
}

/** The deployment's TenantCipher, or undefined (said on stderr) when it has no key provider. */
function cipherOrFail(db: Db): TenantCipher | undefined {
  const cipher = tenantCipherFromConfig(loadConfig(), db);
  if (cipher.available) return cipher;
  console.error('no key provider is configured (ENCRYPTION_KEYS, ENCRYPTION_KEYS_FILE or VAULT_*)');
  return undefined;
}

/**
 * How `tenant import` stores content (docs/adr/0067, 0068): the archive is plaintext; when its tenant's
 * settings (else ENCRYPTION_DEFAULT_MODE) say `on` or `strict`, the tenant's first data key is made in
 * the import's transaction and every content column sealed with it, as the live writers would have.
 * Without a key provider such an archive is refused, unless `--allow-plaintext` (then a warning).
 */
function importSealing(config: Config, allowPlaintext: boolean): ImportSealing {
  const provider = keyProviderFromConfig(config);
  return async (tenantId, settings, client) => {
    const named = (settings as { encryption?: { mode?: unknown } } | null | undefined)?.encryption?.mode;
    const mode: EncryptionMode = ENCRYPTION_MODES.includes(named as EncryptionMode)
      ? (named as EncryptionMode)
      : config.ENCRYPTION_DEFAULT_MODE;
    if (mode === 'off') return undefined;
    if (!provider) {
      if (!allowPlaintext)
        throw new ImportRefused(
          `the archive's tenant has encryption mode ${mode} but no key provider is configured ` +
            '(ENCRYPTION_KEYS, ENCRYPTION_KEYS_FILE or VAULT_*); configure one, or pass --allow-plaintext ' +
            'to store its content in clear',
        );
      console.error(
        `warning: the tenant's encryption mode is ${mode} but no key provider is configured: ` +
          'its content is imported in clear (--allow-plaintext)',
      );
      return undefined;
    }
    // The tenant's first data key (TenantCipher makes it so on first seal), in the import's transaction.
    const { plaintext, wrapped } = await provider.generateDataKey();
    await client.query(
      `INSERT INTO tenant_data_keys (tenant_id, version, provider, kek_id, wrapped_key, state)
       VALUES ($1::uuid, 1, $2, $3, $4, 'active')`,
      [tenantId, wrapped.provider, wrapped.kekId, wrapped.wrapped],
    );
    return {
      strict: mode === 'strict',
      sealText: (text) => sealValue(plaintext, tenantId, 1, 't', text),
      sealJson: (value) => sealValue(plaintext, tenantId, 1, 'j', JSON.stringify(value)),
    };
  };
}

async function run(db: Db, command: string, args: string[]): Promise<number> {
  const tenants = new TenantsRepository(db);
  const keys = new ApiKeysRepository(db);
  switch (command) {
    case 'create-tenant': {
      const name = args.join(' ').trim();
      if (!name) throw new UsageError('create-tenant needs a name');
      print(await createTenant(tenants, name));
      return 0;
    }
    case 'create-key': {
      const [tenantId, name = 'cli'] = args;
      if (!tenantId || !isUuid(tenantId)) throw new UsageError('create-key needs a tenant id');
      if (!(await tenants.settings(tenantId))) return fail(`no tenant ${tenantId}`);
      const { key, hash, prefix } = generateApiKey();
      const row = await keys.create(tenantId, { name, prefix, hash }, OPERATOR_ACTOR);
      print({ ...presentApiKey(row), key });
      return 0;
    }
    case 'revoke-key': {
      const [keyId] = args;
      if (!keyId || !isUuid(keyId)) throw new UsageError('revoke-key needs a key id');
      const key = await keys.byId(keyId);
      if (!key || key.revokedAt) return fail(`no active key ${keyId}`);
      await keys.revoke(key, OPERATOR_ACTOR);
      console.log(`revoked ${keyId}`);
      return 0;
    }
    case 'list-tenants': {
      const p = parseArgs(args, [], ['json']);
      if (p.positional.length > 0) throw new UsageError('list-tenants takes no arguments');
      const all: OperatorTenantResponse[] = [];
      let after: string | undefined;
      for (;;) {
        const rows = await tenants.overviewPage(after, 200);
        all.push(...rows.slice(0, 200).map(presentOperatorTenant));
        if (rows.length <= 200) break;
        after = rows[199].id;
      }
      if (p.switches.has('json')) print(all);
      else for (const t of all) console.log(tenantLine(t));
      return 0;
    }
    case 'show-tenant': {
      print(await operatorTenant(tenants, tenantIdOf(parseArgs(args, []), command)));
      return 0;
    }
    case 'set-tenant': {
      const p = parseArgs(args, ['max-concurrent-turns', 'share', 'daily-spend-limit-usd', 'rate-limit']);
      const tenantId = tenantIdOf(p, command);
      const one = (flag: string): string | undefined => {
        const values = p.flags.get(flag);
        if (values && values.length > 1) throw new UsageError(`--${flag} given twice`);
        return values?.[0];
      };
      const settings: Record<string, number | null> = {};
      const max = one('max-concurrent-turns');
      if (max !== undefined) settings.maxConcurrentTurns = numberOr(max, ['default', 'null']);
      const share = one('share');
      if (share !== undefined) settings.share = numberOr(share, ['default', 'null']);
      const cap = one('daily-spend-limit-usd');
      if (cap !== undefined) settings.dailySpendLimitUsd = numberOr(cap, ['none', 'null']);
      const limits: Record<string, number | null> = {};
      for (const pair of p.flags.get('rate-limit') ?? []) {
        const [bucket, value, ...extra] = pair.split('=');
        if (!bucket || value === undefined || extra.length > 0 || !(bucket in RateLimitOverrides.shape)) {
          throw new UsageError(
            `--rate-limit takes <bucket>=N with bucket ${Object.keys(RateLimitOverrides.shape).join(', ')}`,
          );
        }
        limits[bucket] = numberOr(value, ['default', 'null']);
      }
      if (Object.keys(settings).length === 0 && Object.keys(limits).length === 0) {
        throw new UsageError('set-tenant needs at least one setting');
      }
      // Both validated before either is written.
      const update = Object.keys(settings).length > 0 ? validated(UpdateTenantRequest, settings) : undefined;
      const rateLimits =
        Object.keys(limits).length > 0 ? validated(UpdateRateLimitsRequest, limits) : undefined;
      if (update && !(await tenants.updateOperatorSettings(tenantId, update, OPERATOR_ACTOR))) {
        return fail(`no tenant ${tenantId}`);
      }
      if (rateLimits && !(await tenants.updateRateLimits(tenantId, rateLimits, OPERATOR_ACTOR))) {
        return fail(`no tenant ${tenantId}`);
      }
      print(await operatorTenant(tenants, tenantId));
      return 0;
    }
    case 'pause-tenant': {
      const p = parseArgs(args, ['reason']);
      const tenantId = tenantIdOf(p, command);
      const reason = p.flags.get('reason')?.join(' ').trim() || null;
      if (reason !== null && reason.length > 500) throw new UsageError('--reason is at most 500 characters');
      const change = await tenants.pause(tenantId, reason, OPERATOR_ACTOR);
      if (!change.found) return fail(`no tenant ${tenantId}`);
      if (!change.changed) console.error('the tenant was paused already: nothing changed');
      print(await operatorTenant(tenants, tenantId));
      return 0;
    }
    case 'resume-tenant': {
      const tenantId = tenantIdOf(parseArgs(args, []), command);
      const change = await withTenantPause(db, (pauses) => pauses.resume(tenantId, OPERATOR_ACTOR));
      if (!change.found) return fail(`no tenant ${tenantId}`);
      if (!change.changed) console.error('the tenant was not paused: nothing changed');
      console.error(`${change.woken ?? 0} session(s) woken`);
      print(await operatorTenant(tenants, tenantId));
      return 0;
    }
    case 'audit': {
      const p = parseArgs(args, ['tenant', 'action', 'limit'], ['json']);
      if (p.positional.length > 0) throw new UsageError('audit takes only options');
      const tenantId = p.flags.get('tenant')?.[0];
      if (tenantId !== undefined && !isUuid(tenantId)) throw new UsageError('--tenant needs a tenant id');
      const action = p.flags.get('action')?.[0];
      const limit = numberOr(p.flags.get('limit')?.[0] ?? '50', []) ?? 50;
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit is 1 to 1000');
      const rows = await new AuditLogRepository(db).page({
        tenantId,
        action: action === undefined ? undefined : validated(AuditAction, action),
        limit,
      });
      const events = rows.slice(0, limit).map(presentAuditEvent);
      if (p.switches.has('json')) print(events);
      else {
        for (const e of events) {
          console.log(
            [
              e.createdAt,
              e.tenantId ?? '-'.padEnd(36),
              e.actor.padEnd(44),
              e.action.padEnd(22),
              `${e.targetType}:${e.targetId ?? '-'}`,
              JSON.stringify(e.details),
            ].join('  '),
          );
        }
      }
      return 0;
    }
    case 'rotate-data-key': {
      const tenantId = tenantIdOf(parseArgs(args, []), command);
      if (!(await tenants.settings(tenantId))) return fail(`no tenant ${tenantId}`);
      const cipher = cipherOrFail(db);
      if (!cipher) return 1;
      print(await cipher.rotate(tenantId, OPERATOR_ACTOR));
      return 0;
    }
    case 'rewrap-data-keys': {
      if (args.length > 0) throw new UsageError('rewrap-data-keys takes no arguments');
      const cipher = cipherOrFail(db);
      if (!cipher) return 1;
      // KEK rotation (docs/adr/0067): put the new KEK first in ENCRYPTION_KEYS, keep the old one
      // listed, run this, then drop the old one.
      print(await cipher.rewrapAll(500, OPERATOR_ACTOR));
      return 0;
    }
    case 'tenant': {
      const [sub, ...more] = args;
      const p = parseArgs(more, [], ['allow-plaintext']);
      const [file, ...rest] = p.positional;
      if (sub !== 'import' || !file || rest.length > 0)
        throw new UsageError('tenant import needs one archive');
      if (!existsSync(file)) return fail(`no file ${file}`);
      const input = createReadStream(file);
      const lines = createInterface({
        input: file.endsWith('.gz') ? input.pipe(createGunzip()) : input,
        crlfDelay: Infinity,
      });
      try {
        const { tenantId, counts, mode } = await importTenant(poolOf(db), lines, {
          sealing: importSealing(loadConfig(), p.switches.has('allow-plaintext')),
        });
        print({ tenantId, counts, mode });
        return 0;
      } catch (err) {
        if (err instanceof BadArchive || err instanceof ImportRefused)
          return fail(`not imported: ${err.message}`);
        const e = err as { code?: string; message: string };
        // 23505: a row of the archive is here already (the database was not empty).
        if (e.code === '23505') return fail(`not imported: ${e.message} (import into an empty database)`);
        throw err;
      }
    }
    default:
      throw new UsageError(command ? `unknown command ${command}` : 'no command');
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  // The evaluation gate is a tenant's, over the HTTP API: no database connection.
  if (command === 'eval') {
    try {
      return await runEval(args);
    } catch (err) {
      if (err instanceof EvalUsageError) {
        console.error(`${err.message}\n${USAGE}`);
        return 2;
      }
      return fail(err instanceof Error ? err.message : String(err));
    }
  }
  const config = loadConfig();
  // The same database as the apps, maybe through the same PgBouncer (docs/adr/0041).
  setPreparedStatements(config.DATABASE_PREPARED_STATEMENTS);
  const db = createPrisma(config.DATABASE_URL);
  try {
    return await run(db, command, args);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n${USAGE}`);
      return 2;
    }
    if (err instanceof AppError) return fail(err.message);
    throw err;
  } finally {
    await db.$disconnect();
  }
}

function fail(message: string): number {
  console.error(message);
  return 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
