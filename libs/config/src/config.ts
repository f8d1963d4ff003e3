import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * Process configuration. Only the apps' wiring calls `loadConfig(process.env)`;
 * everything else receives the parsed values as options. Invalid configuration
 * fails at start-up with a message naming the variable.
 */
const Url = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    `must be a URL with scheme ${protocols.join(' or ')}`,
  );

const Int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);

/** A JSON object in a variable, e.g. `{"openai-chat/llama3.1:8b": 8192}`. */
const ContextWindows = z
  .string()
  .transform((raw, ctx) => {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object of "<provider>/<model>": tokens' });
      return z.NEVER;
    }
  })
  .pipe(
    z.record(
      z.string().regex(/^[a-z-]+\/.+$/, 'keys must be "<provider>/<model>"'),
      z.int().min(1024, 'a context window is at least 1024 tokens'),
      { error: 'must be a JSON object of "<provider>/<model>": tokens' },
    ),
  );

/** A JSON object in a variable: `{"openai-chat/llama3.1:8b": {"input": 0, "output": 0}}`, USD per million tokens. */
const ModelPrices = z
  .string()
  .transform((raw, ctx) => {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      ctx.addIssue({
        code: 'custom',
        message: 'must be a JSON object of "<provider>/<model>": {input, output}',
      });
      return z.NEVER;
    }
  })
  .pipe(
    z.record(
      z.string().regex(/^[a-z-]+\/.+$/, 'keys must be "<provider>/<model>" or "<provider>/*"'),
      z.strictObject({
        input: z.number().min(0),
        output: z.number().min(0),
        cachedInput: z.number().min(0).optional(),
        cacheWrite: z.number().min(0).optional(),
      }),
      { error: 'must be a JSON object of "<provider>/<model>": {input, output, cachedInput?, cacheWrite?}' },
    ),
  );

/** A host name, an IP, or an IP/prefix (HTTP_FETCH_ALLOW_HOSTS, MCP_ALLOW_HOSTS). */
function isAllowEntry(entry: string): boolean {
  const [ip, prefix, extra] = entry.replace(/^\[|\]$/g, '').split('/');
  const family = isIP(ip);
  if (family === 0)
    return (
      prefix === undefined && /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i.test(ip)
    );
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return extra === undefined && /^\d+$/.test(prefix) && bits <= (family === 4 ? 32 : 128);
}

/** Comma-separated allow-list entries (HTTP_FETCH_ALLOW_HOSTS, MCP_ALLOW_HOSTS). */
const AllowHosts = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean),
  )
  .refine((hosts) => hosts.every(isAllowEntry), 'must list host names, IPs or CIDR ranges')
  .optional();

export const ConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  DATABASE_URL: Url(['postgres:', 'postgresql:']).default('postgresql://postgres@127.0.0.1:5432/switchboard'),
  /**
   * `false` names no SQL statement (no protocol-level prepared statements): required behind a
   * transaction-pooling PgBouncer older than 1.21 (docs/adr/0041).
   */
  DATABASE_PREPARED_STATEMENTS: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  /**
   * A streaming read replica of DATABASE_URL (docs/adr/0042): the gateway's reads of turns, transcripts,
   * journals, usage and SSE catch-up go to it once it has replayed the primary's current WAL position;
   * unset, every read is on the primary.
   */
  DATABASE_READ_URL: Url(['postgres:', 'postgresql:']).optional(),
  /**
   * How long a pooled Postgres connection may sit idle before the pool closes it (0: never). A new
   * connection is a new backend with no prepared statement and no cached plan: Postgres plans each
   * statement for its values on its first five calls there, tens of ms for the fair choice. pg's own
   * default, 10 s, reconnected after every lull of a bursty load (docs/adr/0082).
   */
  DATABASE_POOL_IDLE_MS: z.coerce.number().int().min(0).max(86_400_000).default(300_000),
  /**
   * How long a read waits for the replica to replay the primary's current WAL position before it
   * goes to the primary instead (docs/adr/0042). 0: the replica only when it is caught up already.
   */
  READ_REPLICA_MAX_WAIT_MS: z.coerce.number().int().min(0).max(10_000).default(100),
  REDIS_URL: Url(['redis:', 'rediss:']).default('redis://127.0.0.1:6379'),
  /**
   * A Redis Cluster instead of one Redis (docs/adr/0043): comma-separated `host:port` seed nodes.
   * REDIS_URL then gives only the credentials, the TLS scheme and the database number is ignored;
   * QUEUE_PREFIX must carry a hash tag (`{sb}`).
   */
  REDIS_CLUSTER_NODES: z
    .string()
    .transform((raw, ctx) => {
      const nodes: { host: string; port: number }[] = [];
      for (const entry of raw.split(',').map((e) => e.trim())) {
        const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):(\d{1,5})$/.exec(entry);
        const port = m ? Number(m[2]) : 0;
        if (!m || port < 1 || port > 65535) {
          ctx.addIssue({
            code: 'custom',
            message: `must list host:port seed nodes; ${JSON.stringify(entry)} is not one`,
          });
          return z.NEVER;
        }
        nodes.push({ host: m[1].replace(/^\[(.*)\]$/, '$1'), port });
      }
      return nodes;
    })
    .optional(),
  /** BullMQ key prefix; tests give each file its own. */
  QUEUE_PREFIX: z.string().min(1).default('sb'),
  PORT: Int(3000, 1),
  /** The address the gateway's port and the workers' METRICS_PORT listen on. */
  HOST: z.string().default('0.0.0.0'),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /**
   * Encrypts triggers' signing secrets at rest (AES-256-GCM, docs/adr/0019): base64 of 32 bytes.
   * Unset: secrets are stored as given. Secrets written under a key cannot be read without it.
   */
  TRIGGER_SECRET_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, { message: 'must be the base64 of 32 bytes' })
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Append log lines to this file instead of writing them to stdout (tests keep in-process apps' logs there). */
  LOG_FILE: z.string().min(1).optional(),
  /** Largest request body the gateway accepts, in bytes. */
  BODY_LIMIT_BYTES: Int(1_048_576, 1024),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: Url(['http:', 'https:']).optional(),
  ANTHROPIC_API_KEY: z.string().optional(),
  ANTHROPIC_BASE_URL: Url(['http:', 'https:']).optional(),
  /** Model used when an agent is created without one. */
  DEFAULT_MODEL: z
    .string()
    .regex(/^[a-z-]+\/.+$/, 'must be "<provider>/<model>"')
    .default('scripted/demo'),
  /** Context windows of models the built-in table does not know (compatible servers): JSON object. */
  MODEL_CONTEXT_WINDOWS: ContextWindows.optional(),
  /** Prices (USD per million tokens) over the maintained price table, for every tenant: JSON object. */
  MODEL_PRICES: ModelPrices.optional(),
  /** Per-attempt timeout of a provider request; a hung model call is retried after it (seed 002). */
  PROVIDER_TIMEOUT_MS: Int(120_000, 1000),
  /** Longest silence between two chunks of a streamed model response before the attempt times out. */
  PROVIDER_STREAM_IDLE_MS: Int(60_000, 100),
  /** Longest a whole provider attempt (headers and the full stream) may take before it times out. */
  PROVIDER_ATTEMPT_TIMEOUT_MS: Int(600_000, 1000),
  /** How long a turn's checkpoint write retries transient database errors (a restart) before the job fails. */
  CHECKPOINT_RETRY_MS: Int(30_000, 0),
  /** How long an approval waits for a decision before it expires (a tenant's approvalTtlMs wins). */
  APPROVAL_TTL_MS: Int(24 * 3600 * 1000, 1000),
  /** The rolling window of the hourly side-effect budget (docs/adr/0058): an hour; shorter only in tests. */
  ACTION_BUDGET_WINDOW_MS: Int(3_600_000, 1000),
  /** Extra scripted-provider fixtures (*.json) to load at start-up. */
  SCRIPTED_FIXTURES_DIR: z.string().optional(),
  /** Comma-separated modules whose `tools` export is registered next to the built-ins (tests; unset in production). */
  EXTRA_TOOL_MODULES: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean),
    )
    .refine((mods) => mods.every((m) => existsSync(m)), 'must list existing module files')
    .optional(),
  /**
   * Hosts `http_fetch` may reach although their address is private, loopback or link-local
   * (docs/adr/0021): comma-separated exact host names, IPs or CIDR ranges. For tests and deliberate
   * internal services; unset in a normal deployment.
   */
  HTTP_FETCH_ALLOW_HOSTS: AllowHosts,
  /**
   * Hosts a tenant's MCP server may live on although their address is private, loopback or
   * link-local (docs/adr/0023; same form as HTTP_FETCH_ALLOW_HOSTS). For tests and internal servers.
   */
  MCP_ALLOW_HOSTS: AllowHosts,
  /** How long a harness worker trusts an MCP server's tool list before listing it again (docs/adr/0023). */
  MCP_TOOLS_TTL_MS: Int(300_000, 0),
  /**
   * Key-encryption keys of the local key ring (docs/adr/0067): comma-separated `id:base64-of-32-bytes`,
   * the first current (wraps new data keys), the others still unwrap what they wrapped.
   */
  ENCRYPTION_KEYS: z
    .string()
    .refine(
      (v) =>
        v
          .split(',')
          .map((e) => e.trim())
          .filter(Boolean)
          .every(
            (e) =>
              /^[A-Za-z0-9._-]{1,64}:/.test(e) &&
              Buffer.from(e.slice(e.indexOf(':') + 1), 'base64').length === 32,
          ),
      { message: 'must be comma-separated id:base64-of-32-bytes entries' },
    )
    .optional(),
  /** The same key ring in a file (one `id:base64` entry a line, `#` comments), when ENCRYPTION_KEYS is unset. */
  ENCRYPTION_KEYS_FILE: z
    .string()
    .refine((f) => existsSync(f), 'must name an existing file')
    .optional(),
  /** A tenant's `encryption.mode` when its settings name none (docs/adr/0067). */
  ENCRYPTION_DEFAULT_MODE: z.enum(['off', 'on', 'strict']).default('off'),
  /** Vault's address: with VAULT_TOKEN and VAULT_TRANSIT_KEY, Vault Transit wraps the data keys (docs/adr/0067). */
  VAULT_ADDR: Url(['http:', 'https:']).optional(),
  VAULT_TOKEN: z.string().min(1).optional(),
  VAULT_TRANSIT_KEY: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, 'must be a Transit key name')
    .optional(),
  VAULT_TRANSIT_MOUNT: z
    .string()
    .regex(/^[A-Za-z0-9._/-]+$/)
    .default('transit'),
  /** Seals MCP servers' auth header values at rest (AES-256-GCM, base64 of 32 bytes); unset: stored as given. */
  MCP_SECRET_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, { message: 'must be the base64 of 32 bytes' })
    .optional(),
  /**
   * Signs the `requestState` of the MCP server's `input_required` results (revision 2026-07-28: a
   * call waiting for the client's tools, docs/adr/0036), HMAC-SHA256; at least 32 characters, the same
   * on every gateway replica. Unset: a random key per process (a retry must reach the same gateway).
   */
  MCP_REQUEST_STATE_KEY: z.string().min(32, { message: 'must be at least 32 characters' }).optional(),
  /** Longest a `wait` admission holds its response for the turn to end (and the cap on `wait: <seconds>`); 0 turns waiting off. */
  WAIT_TIMEOUT_MS: Int(60_000, 0),
  /** How often a streaming round's text is published live at most (docs/adr/0015). */
  LIVE_DELTA_FLUSH_MS: Int(30, 0),
  /**
   * `off` stops recording each model round's exact context ("what the model saw", docs/adr/0045):
   * no hashing, no rows; the timeline's rounds then say `contextRecorded: false`.
   */
  ROUND_CONTEXTS: z.enum(['on', 'off']).default('on'),
  /** Longest memory recall may delay a turn's first model call; past it the turn goes on without (docs/adr/0022). 0 turns recall off. */
  RECALL_TIMEOUT_MS: Int(250, 0),
  /** Memory records recalled into a turn at most (docs/adr/0022). */
  RECALL_LIMIT: Int(5, 1),
  /** The newest matching memory records recall ranks at most (docs/adr/0022); 1,000 at most. */
  RECALL_CANDIDATES: z.coerce.number().int().min(1).max(1000).default(250),
  /** Comment lines an SSE stream sends while idle, so proxies and clients keep it open. */
  SSE_HEARTBEAT_MS: Int(15_000, 100),
  /** How long a Responses WebSocket (WebSocket mode, docs/adr/0035) stays open: the spec's 60 minutes. */
  RESPONSES_WEBSOCKET_MAX_MS: Int(3_600_000, 1000),
  /**
   * How long a gateway trusts an API key it looked up (docs/adr/0017): a revoke through the API is
   * published to every gateway, one they did not hear of applies within this time; 0 looks every key up.
   */
  API_KEY_CACHE_MS: Int(5_000, 0),
  /**
   * Requests per minute per tenant in each rate-limit bucket of the HTTP API (docs/adr/0028), shared
   * by every gateway through Redis; 0 turns a bucket off. A tenant's `rateLimits` (set by the
   * operator: PATCH /v1/admin/tenants/{id}/limits) override them. Webhooks count per trigger.
   */
  RATE_LIMIT_ADMISSION_PER_MIN: Int(600, 0),
  RATE_LIMIT_READS_PER_MIN: Int(3_000, 0),
  RATE_LIMIT_WRITES_PER_MIN: Int(600, 0),
  RATE_LIMIT_WEBHOOKS_PER_MIN: Int(600, 0),
  /**
   * Admissions of one tenant a gateway process runs at once; the rest wait their turn, none is
   * refused (docs/adr/0029): a tenant's burst then shares the gateway with other tenants' requests
   * instead of filling it. 0: no bound.
   */
  ADMISSION_CONCURRENCY_PER_TENANT: Int(8, 0),
  /**
   * The same bound while another tenant is admitting through the process too (one started within the
   * last second): a burst then leaves the gateway's event loop to its neighbours. 0: no lower bound.
   */
  ADMISSION_CONCURRENCY_PER_TENANT_CONTENDED: Int(2, 0),
  /** Turns one harness worker process runs at once. */
  HARNESS_CONCURRENCY: Int(32, 1),
  /** The event-loop delay the harness's adaptive limit aims under (docs/adr/0029). */
  HARNESS_LOOP_DELAY_TARGET_MS: Int(10, 1),
  /**
   * How often a harness process with turns running and permits free looks in Postgres for runnable
   * turns its queue worker has not handed it (docs/adr/0075, 0081); 0: only its jobs bring turns.
   */
  HARNESS_INTAKE_POLL_MS: Int(250, 0),
  /**
   * The most turns one tenant may run at once across every harness worker (docs/adr/0029), when the
   * operator set no `maxConcurrentTurns` for it; 0: no cap (the fair share across tenants still holds).
   * Turns past the cap stay queued and start as soon as a slot frees.
   */
  TENANT_MAX_CONCURRENT_TURNS: Int(0, 0),
  HOOKS_CONCURRENCY: Int(16, 1),
  /**
   * How often a post-turn job may stall (its hooks worker died holding it) before BullMQ fails it
   * (docs/adr/0027); a job failed so is re-published by the hooks reconcile.
   */
  HOOKS_MAX_STALLED_COUNT: Int(10, 1),
  /**
   * How long after a turn ended the hooks reconcile (each maintenance `reconcile`, every
   * RECONCILE_INTERVAL_MS) first looks for its missing post-turn hooks (docs/adr/0027).
   */
  HOOKS_RECONCILE_GRACE_MS: Int(10_000, 0),
  /**
   * How long a harness process holds an ended turn's post-turn job for other turns that end to share
   * it (docs/adr/0070, group commit); 0: each turn's job alone.
   */
  HOOKS_BATCH_WINDOW_MS: Int(50, 0),
  TRIAGE_CONCURRENCY: Int(16, 1),
  /**
   * Asked when the triage model (the tenant's `burst` route) answers with something that is not a
   * decision; unset: the trigger's agent's own model (docs/adr/0018).
   */
  TRIAGE_FALLBACK_MODEL: z
    .string()
    .regex(/^[a-z-]+\/.+$/, 'must be "<provider>/<model>"')
    .optional(),
  /** How long a model's triage decision is reused for an identical delivery; 0 turns the cache off. */
  TRIAGE_CACHE_TTL_MS: Int(600_000, 0),
  /** Host names a `notify` endpoint may have although they resolve to private addresses (comma-separated). */
  OUTBOUND_WEBHOOK_ALLOW_HOSTS: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    )
    .optional(),
  /** How long one outbound notification attempt waits for the endpoint's answer. */
  OUTBOUND_WEBHOOK_TIMEOUT_MS: Int(10_000, 100),
  /** The first retry delay of an outbound notification (exponential after it); tests make it small. */
  OUTBOUND_WEBHOOK_BACKOFF_MS: Int(5_000, 10),
  /** What a tenant's LLM judges may spend per UTC day when its settings name no evaluation budget (docs/adr/0062). */
  EVAL_DAILY_BUDGET_USD: z.coerce.number().min(0).max(1_000_000).default(10),
  /**
   * Session lease: how long a crashed worker's session stays locked, and how long a running turn
   * outlasts a database outage before its lease is lost and the turn re-runs on another claim.
   */
  SESSION_LEASE_MS: Int(30_000, 500),
  /** BullMQ lock duration and stalled-job check interval. */
  QUEUE_LOCK_MS: Int(30_000, 500),
  QUEUE_STALLED_INTERVAL_MS: Int(30_000, 500),
  /** How often a worker re-enqueues unfinished turns found only in Postgres. */
  RECONCILE_INTERVAL_MS: Int(60_000, 0),
  /** How often each hooks worker compares running canaries' scores and rolls a worse candidate back (docs/adr/0064). 0: off. */
  CANARY_EVAL_INTERVAL_MS: Int(10_000, 0),
  /**
   * How often expired session leases are freed and their sessions' next turns woken (docs/adr/0029):
   * how soon after SESSION_LEASE_MS a dead worker's sessions, and its tenants' slots, are taken up. 0: off.
   */
  LEASE_SWEEP_MS: Int(5_000, 0),
  /** TokenJuice (docs/adr/0033): how long a compacted tool result's original stays retrievable. */
  TOKENJUICE_RETENTION_HOURS: Int(168, 1),
  /** Tool results smaller than this (UTF-8 bytes) are never compacted. */
  TOKENJUICE_MIN_BYTES: Int(2048, 0),
  /**
   * Results longer than this (characters) are not parsed by kind: `full` keeps their head and tail
   * (the original stored), `light` leaves them alone. Bounds the event-loop time one result costs.
   */
  TOKENJUICE_MAX_INPUT_CHARS: Int(262_144, 1024),
  /** How often the maintenance `tokenjuice` sweep deletes expired originals. 0: off. */
  TOKENJUICE_SWEEP_MS: Int(3_600_000, 0),
  /**
   * How often the maintenance `partitions` task runs pg_partman's maintenance on the partitioned journal,
   * transcript, ledger and hook runs (docs/adr/0044): children made ahead, old ones detached. 0: off.
   */
  PARTITION_MAINTENANCE_MS: Int(3_600_000, 0),
  /**
   * How often the maintenance `retention` task purges the content of sessions past their tenant's
   * `transcriptRetentionDays` (docs/adr/0068). 0: off.
   */
  RETENTION_INTERVAL_MS: Int(3_600_000, 0),
  /**
   * How long the partitions of events, messages, ledger_entries and hook_runs stay attached, as a
   * Postgres interval (`90 days`, `12 weeks`, `1 year`); unset: kept for ever. Older weekly partitions
   * are detached, not dropped, for an operator to archive and drop (docs/adr/0044). Needs pg_partman.
   */
  PARTITION_RETENTION: z
    .string()
    .regex(/^[1-9][0-9]* (day|week|month|year)s?$/, 'an interval such as "90 days" or "12 weeks"')
    .optional(),
  /**
   * Shortest gap between two fires a schedule may have (docs/adr/0020). Cron's resolution is a second,
   * so the floor of 1000 allows every expression; raise it to keep tenants off per-second ticks.
   */
  SCHEDULE_MIN_INTERVAL_MS: Int(1000, 1000),
  /**
   * The recheck deadline a work item's blocker gets when update_work_item gives no recheck_after
   * (seed 002; docs/adr/0031): one low-priority system tick when it is due.
   */
  WORK_ITEM_RECHECK_MS: Int(3_600_000, 1000),
  /**
   * Keep-working system ticks in a row that may end with no work item changed before the runtime
   * stops ticking the agent (docs/adr/0031); the next message, enqueue or due recheck starts again.
   */
  WORK_TICK_MAX_IDLE: Int(3, 1),
  /**
   * The provider-only work-item progress reminder (seed 002; docs/adr/0031): after this many rounds of a
   * turn without a successful work-item call, then at most every COOLDOWN rounds, bounded to MAX_TOKENS.
   */
  WORK_ITEM_STALE_REMINDER_ROUNDS: Int(8, 1),
  WORK_ITEM_STALE_REMINDER_COOLDOWN_ROUNDS: Int(4, 1),
  WORK_ITEM_STALE_REMINDER_MAX_TOKENS: Int(400, 50),
  /** Workers serve /metrics (Prometheus), /healthz and /readyz on this port, on HOST; 0 turns it off. */
  METRICS_PORT: Int(0, 0),
  SHUTDOWN_GRACE_MS: Int(25_000, 0),
  /**
   * The queue board at /admin/queues (Bull Board, ADMIN_TOKEN) is read-only unless this is `true`:
   * then the operator can retry, promote, clean, pause and empty jobs and queues from it.
   */
  QUEUE_BOARD_ACTIONS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /**
   * The console's built files (`npm run console:build`), served by the gateway at /console; a path
   * relative to the working directory. Missing: /console answers 503 naming the build command.
   */
  CONSOLE_DIST_DIR: z.string().min(1).default('apps/console/dist'),
  /**
   * How often a harness worker publishes its heartbeat (turns in flight, permits) to Redis, listed by
   * GET /v1/admin/processes; a process silent for HARNESS_HEARTBEAT_TTL_MS drops off the list.
   */
  HARNESS_HEARTBEAT_MS: Int(5_000, 100),
  HARNESS_HEARTBEAT_TTL_MS: Int(15_000, 300),
  OTEL_SDK_DISABLED: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /**
   * Jaeger's UI (docs/adr/0045): a turn's timeline links its trace as `${JAEGER_UI_URL}/trace/<id>`.
   * Only a link for the reader's browser: the gateway never calls it. A trailing slash is dropped.
   */
  JAEGER_UI_URL: Url(['http:', 'https:'])
    .transform((v) => v.replace(/\/+$/, ''))
    .optional(),
});

export type Config = z.infer<typeof ConfigSchema>;

export class ConfigError extends Error {
  constructor(readonly issues: { variable: string; message: string }[]) {
    super(`Invalid configuration:\n${issues.map((i) => `  ${i.variable}: ${i.message}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset" so `FOO= node app` behaves like no FOO.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = ConfigSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => ({ variable: String(i.path[0] ?? '?'), message: i.message })),
    );
  }
  if (parsed.data.REDIS_CLUSTER_NODES && hashTag(parsed.data.QUEUE_PREFIX) === undefined) {
    // BullMQ's scripts touch several keys of a queue at once: on a cluster they must share a slot.
    throw new ConfigError([
      {
        variable: 'QUEUE_PREFIX',
        message: `must carry a Redis Cluster hash tag, e.g. {${parsed.data.QUEUE_PREFIX.replace(/[{}]/g, '')}}, when REDIS_CLUSTER_NODES is set`,
      },
    ]);
  }
  return parsed.data;
}

/**
 * The hash tag of a key prefix (what Redis Cluster hashes of every key that starts with it): the
 * text between its first `{` and the next `}`, undefined when there is none or it is empty.
 */
export function hashTag(prefix: string): string | undefined {
  const open = prefix.indexOf('{');
  if (open < 0) return undefined;
  const close = prefix.indexOf('}', open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : undefined;
}
