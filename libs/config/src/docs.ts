import { ConfigSchema } from './config';

/**
 * What every configuration variable means, for the README's table (`npm run docs:config` writes it;
 * a unit test fails when the README's differs). Typed by the schema's keys, so a variable added to
 * `ConfigSchema` without a line here does not compile. Defaults are read from the schema itself.
 */
interface Doc {
  meaning: string;
  /** What the default cell says instead of the schema's default. */
  default?: string;
}

export const CONFIG_DOCS: Record<keyof typeof ConfigSchema.shape, Doc> = {
  NODE_ENV: {
    meaning:
      '`development`, `production` or `test`, for the libraries that read it; Switchboard behaves the same under each',
  },
  DATABASE_URL: { meaning: 'Postgres' },
  DATABASE_PREPARED_STATEMENTS: {
    meaning:
      '`false` sends every SQL statement unnamed (no protocol-level prepared statements); must be `false` behind PgBouncer in transaction pooling mode older than 1.21, or on 1.21 and later without `max_prepared_statements` (ADR 0041)',
  },
  DATABASE_READ_URL: {
    meaning:
      "a streaming read replica of `DATABASE_URL`: the gateway's reads of turns, transcripts, journals, usage and SSE catch-up go to it once it has replayed the primary's current WAL position (read-your-writes), else to the primary (ADR 0042)",
    default: 'unset (every read on the primary)',
  },
  DATABASE_POOL_IDLE_MS: {
    meaning:
      'how long a pooled Postgres connection (each process holds up to 10) may sit idle before it is closed; `0`: never. A new connection is a new Postgres backend that prepares and plans every statement again, so a short value reconnects after every lull (ADR 0082)',
  },
  READ_REPLICA_MAX_WAIT_MS: {
    meaning:
      "how long a read waits for the replica to replay the primary's current WAL position before it goes to the primary (ADR 0042); `0`: the replica only when already caught up",
  },
  REDIS_URL: {
    meaning:
      'Redis (BullMQ); run it with `maxmemory-policy noeviction`. With `REDIS_CLUSTER_NODES` set only its credentials and `rediss:` scheme apply',
  },
  REDIS_CLUSTER_NODES: {
    meaning:
      'a Redis Cluster instead: comma-separated `host:port` seed nodes; `QUEUE_PREFIX` must then carry a hash tag such as `{sb}` (ADR 0043)',
    default: 'unset (one Redis at `REDIS_URL`)',
  },
  QUEUE_PREFIX: {
    meaning:
      "BullMQ's key prefix in Redis: deployments (or tests) sharing one Redis each use their own; on a Redis Cluster it must carry a hash tag (`{sb}`), so every key lives in one slot (ADR 0043)",
  },
  PORT: { meaning: "the gateway's HTTP port" },
  HOST: { meaning: "the address the gateway's `PORT` and the workers' `METRICS_PORT` listen on" },
  ADMIN_TOKEN: {
    meaning:
      'guards the admin API (`/v1/admin/...`: tenants, their limits and pause, the audit log of every tenant) and the queue board (`/admin/queues`); at least 16 characters',
    default: 'unset (admin API disabled)',
  },
  TRIGGER_SECRET_KEY: {
    meaning:
      "base64 of 32 bytes: triggers' signing secrets are sealed with AES-256-GCM at rest (ADR 0019); secrets sealed under a key need it to verify deliveries",
    default: 'unset (stored as given)',
  },
  LOG_LEVEL: {
    meaning:
      'pino level of every process; the gateway logs one `request completed` line per request with its `x-request-id`',
  },
  LOG_FILE: {
    meaning:
      'a file every process appends its log lines to instead of stdout (tests use it for the apps they run in-process)',
    default: 'unset (stdout)',
  },
  BODY_LIMIT_BYTES: { meaning: 'largest request body' },
  OPENAI_API_KEY: {
    meaning:
      "the OpenAI SDK's key, for `openai/<model>` (Responses API) and `openai-chat/<model>` (Chat Completions)",
  },
  OPENAI_BASE_URL: { meaning: 'another OpenAI-compatible server (vLLM, Ollama, a proxy) for the OpenAI SDK' },
  ANTHROPIC_API_KEY: { meaning: "the Anthropic SDK's key, for `anthropic/<model>` (Messages API)" },
  ANTHROPIC_BASE_URL: { meaning: 'another Anthropic-compatible endpoint (a proxy) for the Anthropic SDK' },
  DEFAULT_MODEL: { meaning: 'model of agents created without one' },
  MODEL_CONTEXT_WINDOWS: {
    meaning:
      'JSON `{"<provider>/<model>": tokens}` for models the built-in table does not know (e.g. a local 8k model), so the context guard compacts in time',
  },
  MODEL_PRICES: {
    meaning:
      'JSON `{"<provider>/<model>": {"input", "output", "cachedInput"?}}` in USD per million tokens, over the maintained price table for every tenant (a tenant\'s `modelPrices` win)',
  },
  PROVIDER_TIMEOUT_MS: {
    meaning: "per-attempt wait for a model's response headers (then retried, seed 002)",
  },
  PROVIDER_STREAM_IDLE_MS: {
    meaning:
      'longest silence between two chunks of a streamed model response; past it the attempt is a `timeout` and is retried',
  },
  PROVIDER_ATTEMPT_TIMEOUT_MS: {
    meaning:
      'longest a whole model attempt (headers and stream) may take; past it the attempt is a `timeout` and is retried',
  },
  CHECKPOINT_RETRY_MS: {
    meaning:
      "how long a turn's checkpoint write (e.g. a finished tool's result) retries transient database errors, such as a Postgres restart, before the job fails",
  },
  APPROVAL_TTL_MS: {
    meaning:
      "how long an approval waits for a decision before it expires (the call then gets an `ApprovalExpired` result); expiry runs with the reconciler (`RECONCILE_INTERVAL_MS`); a tenant's `approvalTtlMs` wins",
  },
  ACTION_BUDGET_WINDOW_MS: {
    meaning:
      "the rolling window of the hourly side-effect budget (agents' and tenants' `maxActionsPerHour`, ADR 0058): one hour; set it shorter only in tests",
  },
  SCRIPTED_FIXTURES_DIR: { meaning: 'extra fixtures (`*.json`) for the scripted provider' },
  EXTRA_TOOL_MODULES: {
    meaning:
      'comma-separated module files whose `tools` export is registered next to the built-in tools (tests and local experiments; leave unset in production)',
  },
  HTTP_FETCH_ALLOW_HOSTS: {
    meaning:
      'comma-separated host names, IPs or CIDR ranges `http_fetch` may reach although their address is private, loopback or link-local (ADR 0021); leave unset in production unless an internal service must be fetched',
  },
  MCP_ALLOW_HOSTS: {
    meaning:
      'comma-separated host names, IPs or CIDR ranges an MCP server may live on although their address is private, loopback or link-local (ADR 0023)',
  },
  MCP_TOOLS_TTL_MS: {
    meaning:
      "how long a harness worker trusts an MCP server's tool list before listing it again (a `tools/list_changed` notification drops it sooner)",
  },
  ENCRYPTION_KEYS: {
    meaning:
      "the local key ring of key-encryption keys wrapping tenants' data keys (ADR 0067): comma-separated `id:base64-of-32-bytes`, the first current; keep an old one listed until `npm run admin -- rewrap-data-keys` has run",
    default: 'unset (no local key ring)',
  },
  ENCRYPTION_KEYS_FILE: {
    meaning:
      'a file holding the key ring instead (one `id:base64` entry a line, `#` comments), read when `ENCRYPTION_KEYS` is unset',
    default: 'unset',
  },
  ENCRYPTION_DEFAULT_MODE: {
    meaning:
      "a tenant's encryption mode when its settings name none: `off`, `on` (content encrypted per tenant) or `strict` (also no full-text or vector index of it); anything but `off` needs a key provider (ADR 0067)",
  },
  VAULT_ADDR: {
    meaning:
      "HashiCorp Vault's address: with `VAULT_TOKEN` and `VAULT_TRANSIT_KEY` its Transit engine wraps the tenants' data keys instead of the local key ring (ADR 0067)",
    default: 'unset',
  },
  VAULT_TOKEN: {
    meaning:
      'the Vault token (sent as `X-Vault-Token`) allowed to encrypt, decrypt and rewrap with the Transit key',
    default: 'unset',
  },
  VAULT_TRANSIT_KEY: {
    meaning: "the name of the Transit key that wraps tenants' data keys",
    default: 'unset',
  },
  VAULT_TRANSIT_MOUNT: { meaning: 'where the Transit engine is mounted in Vault' },
  MCP_SECRET_KEY: {
    meaning:
      "base64 of 32 bytes: MCP servers' auth header values are sealed with AES-256-GCM at rest (ADR 0023)",
    default: 'unset (stored as given)',
  },
  MCP_REQUEST_STATE_KEY: {
    meaning:
      'at least 32 characters, the same on every gateway replica: signs (HMAC-SHA256) the `requestState` the MCP server hands a 2026-07-28 client whose tools a turn waits for (ADR 0036)',
    default: 'unset: a random key per process (the retried call must reach the same gateway)',
  },
  WAIT_TIMEOUT_MS: {
    meaning:
      'longest an admission with `wait` holds its answer for the turn to end (also the cap on `wait: <seconds>`); the gateway hears the end on the live channel (ADR 0011), not by polling; `0` turns waiting off',
  },
  LIVE_DELTA_FLUSH_MS: {
    meaning:
      "how often the harness publishes a streaming round's text live at most (ADR 0015); the first chunk of a round goes at once",
  },
  ROUND_CONTEXTS: {
    meaning:
      "`off` stops recording each model round's exact context (GET /v1/turns/{id}/rounds/{index}/context answers 404, the timeline's rounds say `contextRecorded: false`); `on` costs about 5 kB of WAL (+19%) and 1 ms of CPU per two-round turn (ADR 0045)",
  },
  RECALL_TIMEOUT_MS: {
    meaning:
      "longest memory recall may delay a turn's first model call; past it the turn goes on without memory (a `context_unavailable` event); `0` turns recall off (ADR 0022)",
  },
  RECALL_LIMIT: { meaning: 'episodes and notes, and facts, recalled into a turn at most (each; ADR 0052)' },
  RECALL_CANDIDATES: {
    meaning:
      'the newest matching memory records recall ranks at most (1 to 1,000): recall runs before every turn, so it ranks fewer than `memory_search` and the API (1,000); an older record stays in reach of a query that fewer newer records match (ADR 0022)',
  },
  SSE_HEARTBEAT_MS: {
    meaning: 'how often an idle SSE stream (`…/stream`) sends a comment line, so proxies keep it open',
  },
  RESPONSES_WEBSOCKET_MAX_MS: {
    meaning:
      'how long a WebSocket on `/v1/responses` (WebSocket mode) stays open: then an `error` event `websocket_connection_limit_reached` and the socket closes (the Open Responses limit is 60 minutes; ADR 0035)',
  },
  API_KEY_CACHE_MS: {
    meaning:
      'how long a gateway trusts a valid API key it looked up; a revoke through the API is published to every gateway (Redis), one made elsewhere applies within this time (ADR 0017); `0` looks every key up',
  },
  RATE_LIMIT_ADMISSION_PER_MIN: {
    meaning:
      'admissions (`POST /v1/sessions/{id}/messages`, `/v1/chat/completions`, `/v1/responses` together) per minute per tenant, counted in Redis across all gateways; past it 429 `rate_limited` with `Retry-After`, `RateLimit` and `RateLimit-Policy` (ADR 0028); `0` turns the bucket off',
  },
  RATE_LIMIT_READS_PER_MIN: { meaning: 'tenant `GET` requests per minute per tenant (ADR 0028); `0` off' },
  RATE_LIMIT_WRITES_PER_MIN: {
    meaning: 'other tenant `POST`/`PATCH`/`DELETE` requests per minute per tenant (ADR 0028); `0` off',
  },
  RATE_LIMIT_WEBHOOKS_PER_MIN: {
    meaning:
      'deliveries per minute per trigger to `POST /v1/hooks/{token}` (ADR 0028); `0` off. The operator overrides any of the four per tenant, and sets per-key quotas, with `PATCH /v1/admin/tenants/{id}/limits`',
  },
  ADMISSION_CONCURRENCY_PER_TENANT: {
    meaning:
      "admissions of one tenant a gateway process runs at once; the rest wait their turn, none is refused (ADR 0029), so a tenant's burst shares the gateway with other tenants' requests; `0` no bound",
  },
  ADMISSION_CONCURRENCY_PER_TENANT_CONTENDED: {
    meaning:
      "the same bound while another tenant is admitting through the process too (one started within the last second): a tenant alone admits `ADMISSION_CONCURRENCY_PER_TENANT` at once, and a burst leaves the event loop to a neighbour's requests while there is one (ADR 0029); `0` the same as `ADMISSION_CONCURRENCY_PER_TENANT`",
  },
  HARNESS_CONCURRENCY: {
    meaning:
      "the most turns one harness process runs at once: the ceiling of a limit that adapts to the process's event loop (ADR 0029), so CPU-bound turns do not pile up",
  },
  HARNESS_LOOP_DELAY_TARGET_MS: {
    meaning:
      "the event-loop delay (mean per 250 ms window) the harness's adaptive limit aims under: lower serves a small tenant's turn sooner during another's backlog, higher packs more turns into the process (ADR 0029)",
  },
  HARNESS_INTAKE_POLL_MS: {
    meaning:
      'how often a harness process that has turns running and permits free looks in Postgres for runnable turns its queue worker has not handed it yet (a burst of slow turns is claimed without waiting for running ones to end, ADR 0075), and at most four fair choices run at once per process so claimed turns are not starved by the choices queued behind them; `0` only its jobs bring it turns, and choices are not limited',
  },
  TENANT_MAX_CONCURRENT_TURNS: {
    meaning:
      'the most turns one tenant runs at once across every harness worker when the operator set no `maxConcurrentTurns` for it (ADR 0029); `0` no cap. Turns past the cap stay queued and start as a slot frees; tenants share the workers fairly either way (fewest turns running per `share` first)',
  },
  HOOKS_CONCURRENCY: {
    meaning: 'post-turn jobs (a turn’s hooks, or one hook’s retry) one hooks worker process runs at once',
  },
  HOOKS_MAX_STALLED_COUNT: {
    meaning:
      'how often a post-turn job may stall (its hooks worker died holding it) before BullMQ fails it; the hooks reconcile publishes it again (ADR 0027)',
  },
  HOOKS_BATCH_WINDOW_MS: {
    meaning:
      'how long a harness worker holds an ended turn’s post-turn job for other turns that end to share it: the hooks worker commits a job’s turns together (ADR 0070); `0` each turn’s job alone, at once',
  },
  HOOKS_RECONCILE_GRACE_MS: {
    meaning:
      'how long after a turn ended the hooks reconcile (every `RECONCILE_INTERVAL_MS`) first looks for its missing post-turn hooks (ADR 0027)',
  },
  TRIAGE_CONCURRENCY: { meaning: 'trigger deliveries one triage worker process triages at once' },
  TRIAGE_FALLBACK_MODEL: {
    meaning:
      "model asked when the tenant's `burst` model answers something that is not a triage decision (ADR 0018)",
    default: "unset (the trigger agent's model)",
  },
  TRIAGE_CACHE_TTL_MS: {
    meaning:
      "how long a model's triage decision is reused for an identical delivery (same trigger, event type and body); `0` turns the cache off",
  },
  OUTBOUND_WEBHOOK_ALLOW_HOSTS: {
    meaning:
      'comma-separated host names a `notify` endpoint may have although they resolve to private, loopback or link-local addresses (tests, an internal receiver on purpose)',
  },
  OUTBOUND_WEBHOOK_TIMEOUT_MS: {
    meaning:
      "how long one notification attempt waits for the endpoint's answer (then retried: 8 attempts, exponential from `OUTBOUND_WEBHOOK_BACKOFF_MS`)",
  },
  EVAL_DAILY_BUDGET_USD: {
    meaning:
      "what a tenant's LLM-judge scorers may spend per UTC day (USD) when its settings name no `evaluation.dailyBudgetUsd`; a judge past it records its score `skipped` (`evaluation_budget`) without calling (docs/adr/0062)",
  },
  OUTBOUND_WEBHOOK_BACKOFF_MS: {
    meaning:
      'the first retry delay of a notification (`notify` or completion webhook), doubling after each failed attempt',
  },
  SESSION_LEASE_MS: {
    meaning:
      "how long a crashed worker's session stays locked; also how long a running turn outlasts a Postgres or " +
      'PgBouncer outage: past it the lease is lost, the turn re-runs on another claim and a side-effecting ' +
      'result not yet saved becomes `outcome_unknown` (docs/DEPLOYMENT.md)',
  },
  QUEUE_LOCK_MS: {
    meaning:
      "BullMQ's lock on a running job (renewed at half of it, so a long job keeps it); a worker that died loses its jobs to another after it",
  },
  QUEUE_STALLED_INTERVAL_MS: {
    meaning: 'how often workers look for stalled jobs (a worker that died holding them) and take them over',
  },
  RECONCILE_INTERVAL_MS: {
    meaning:
      'how often unfinished turns are re-enqueued from Postgres: one `reconcile` job per interval for the whole cluster (a BullMQ job scheduler on the `maintenance` queue); `0` leaves only the reconcile at each harness start',
  },
  CANARY_EVAL_INTERVAL_MS: {
    meaning:
      "how often each hooks worker compares every running canary's candidate and baseline mean online scores (`turn_scores`) and rolls a candidate worse by the canary's margin back (ADR 0064); `0` off (no automatic rollback)",
  },
  LEASE_SWEEP_MS: {
    meaning:
      "how often expired session leases (a worker died holding them) are freed and their sessions' next turns woken, one `leases` job per interval for the cluster (ADR 0029); `0` off (the reconcile still recovers them)",
  },
  TOKENJUICE_RETENTION_HOURS: {
    meaning:
      'how long the original of a tool result TokenJuice compacted lossily stays retrievable with `tokenjuice_retrieve` (ADR 0033)',
  },
  TOKENJUICE_MIN_BYTES: { meaning: 'tool results smaller than this are never compacted' },
  TOKENJUICE_MAX_INPUT_CHARS: {
    meaning:
      'longer results are not parsed by kind: `full` keeps their first 16 KB and last 4 KB (the original stored), `light` leaves them alone; bounds the CPU one result costs',
  },
  TOKENJUICE_SWEEP_MS: {
    meaning:
      'how often the maintenance `tokenjuice` job deletes expired originals, one job per interval for the cluster; `0` off',
  },
  PARTITION_MAINTENANCE_MS: {
    meaning:
      "how often the maintenance `partitions` job runs pg_partman's upkeep of the partitioned journal, transcript, ledger and hook runs (children made ahead, retention applied; docs/adr/0044), one job per interval for the cluster; `0` off",
  },
  RETENTION_INTERVAL_MS: {
    meaning:
      "how often the maintenance `retention` job purges the content of sessions idle longer than their tenant's `transcriptRetentionDays` (messages, tool arguments and results, originals, journal payloads; cost lines kept; docs/adr/0068), one job per interval for the cluster; `0` off",
  },
  PARTITION_RETENTION: {
    meaning:
      'how long weekly partitions of events, messages, ledger_entries and hook_runs stay attached, a Postgres interval (`90 days`, `12 weeks`); older ones are detached, kept as tables for an operator to archive and drop (docs/adr/0044); needs pg_partman',
    default: 'unset: kept for ever',
  },
  SCHEDULE_MIN_INTERVAL_MS: {
    meaning:
      "shortest gap between two fires a schedule may have (a create or change below it is a 400); 1000 is cron's resolution, so the default allows every expression (ADR 0020)",
  },
  WORK_ITEM_RECHECK_MS: {
    meaning:
      "the recheck deadline a work item's blocker gets when `update_work_item` gives no `recheck_after`: one low-priority system tick when it is due (ADR 0031)",
  },
  WORK_ITEM_STALE_REMINDER_ROUNDS: {
    meaning:
      'rounds of a turn without a successful work-item tool call before the runtime adds a provider-only progress reminder (never journaled) built from the current work item (ADR 0031)',
  },
  WORK_ITEM_STALE_REMINDER_COOLDOWN_ROUNDS: {
    meaning: 'rounds between two work-item progress reminders within one run',
  },
  WORK_ITEM_STALE_REMINDER_MAX_TOKENS: {
    meaning: 'the size bound of a work-item progress reminder, in tokens (about four characters each)',
  },
  WORK_TICK_MAX_IDLE: {
    meaning:
      'keep-working system ticks in a row that may end with no work item changed before the runtime stops ticking the agent; the next message, enqueue or due recheck starts again (ADR 0031)',
  },
  METRICS_PORT: {
    meaning:
      "the workers' port for `/metrics`, `/healthz` and `/readyz`, on `HOST` (9464 in the image); `0` serves none (the gateway serves them on `PORT`)",
    default: '`0` (off)',
  },
  SHUTDOWN_GRACE_MS: {
    meaning:
      'how long a process that got SIGTERM lets running work finish (requests, turns to their next checkpoint, jobs) before it exits',
  },
  QUEUE_BOARD_ACTIONS: {
    meaning:
      '`true` lets the queue board (`/admin/queues`, Bull Board behind `ADMIN_TOKEN`) retry, promote, clean, pause and empty jobs and queues; otherwise it only shows them',
  },
  CONSOLE_DIST_DIR: {
    meaning:
      "the web console's built files (`npm run console:build`), served at `/console` (relative to the working directory); while missing, `/console` answers 503 naming the build command",
  },
  HARNESS_HEARTBEAT_MS: {
    meaning:
      'how often each harness worker publishes its heartbeat (turns in flight, permits) to Redis for `GET /v1/admin/processes`',
  },
  HARNESS_HEARTBEAT_TTL_MS: {
    meaning:
      'a harness worker whose heartbeat is older than this drops off `GET /v1/admin/processes` (a killed process is gone within it)',
  },
  OTEL_SDK_DISABLED: { meaning: '`true` starts no OpenTelemetry at all (no trace ids in logs or jobs)' },
  JAEGER_UI_URL: {
    meaning:
      "Jaeger's UI as the operator's browser reaches it (e.g. `http://localhost:16686`): a turn's timeline (`GET /v1/turns/:id/timeline`) links its trace as `traceUrl` (ADR 0045), and the console links trace ids to `<url>/trace/<id>` (`GET /v1/console/config`); the gateway never calls it",
    default: 'unset (no trace link)',
  },
};

/** Variables read outside `ConfigSchema` (the OpenTelemetry SDK's own), documented with it. */
export const OTHER_VARIABLES: Record<string, Required<Doc>> = {
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    default: 'unset',
    meaning:
      'the OTLP/HTTP collector spans are exported to (e.g. `http://jaeger:4318`); with no exporter configured (neither this, `OTEL_TRACES_EXPORTER` nor `OTEL_TRACES_SAMPLER`) OpenTelemetry does not start at all: it costs nothing, and logs carry no trace ids (docs/adr/0072)',
  },
  OTEL_TRACES_EXPORTER: {
    default: 'unset (`otlp` with an endpoint)',
    meaning:
      '`none` runs tracing without a collector: spans are not recorded, but trace ids are made and reach logs, jobs and turns (the http and undici instrumentations carry them between processes)',
  },
  OTEL_SERVICE_NAME: { default: 'unset', meaning: 'the service name on spans' },
  OTEL_NODE_ENABLED_INSTRUMENTATIONS: {
    default: '`http,undici,pg,ioredis`',
    meaning:
      'which OpenTelemetry auto-instrumentations load; with `OTEL_TRACES_EXPORTER=none` `http,undici` (what carries trace context between processes)',
  },
  OTEL_TRACES_SAMPLER: {
    default: 'unset',
    meaning: "the OpenTelemetry SDK's sampler by its standard name (with `OTEL_TRACES_SAMPLER_ARG`)",
  },
};

const BEGIN = '<!-- config-table:begin (npm run docs:config writes this table from libs/config) -->';
const END = '<!-- config-table:end -->';

/** A schema default as the table shows it. */
function defaultCell(value: unknown): string {
  if (value === undefined) return 'unset';
  if (Array.isArray(value)) return value.length === 0 ? 'unset' : `\`${value.join(',')}\``;
  return `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;
}

/** The table's rows: every schema variable in the schema's order, then the OpenTelemetry SDK's. */
export function configRows(): [name: string, dflt: string, meaning: string][] {
  const defaults = ConfigSchema.parse({}) as Record<string, unknown>;
  const rows: [string, string, string][] = [];
  for (const [name, doc] of Object.entries<Doc>(CONFIG_DOCS)) {
    rows.push([`\`${name}\``, doc.default ?? defaultCell(defaults[name]), doc.meaning]);
  }
  for (const [name, doc] of Object.entries(OTHER_VARIABLES))
    rows.push([`\`${name}\``, doc.default, doc.meaning]);
  return rows;
}

/** The table as markdown (prettier pads it when the README is formatted). */
export function configTable(): string {
  const line = (cells: string[]) => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(['variable', 'default', 'meaning']), '| --- | --- | --- |', ...configRows().map(line)].join(
    '\n',
  );
}

/** The README with its table replaced by `configTable()`; throws when the markers are missing. */
/** Where the table lies between the markers, or undefined without them. */
function tableBounds(readme: string): { begin: number; end: number } | undefined {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  return begin < 0 || end < begin ? undefined : { begin, end };
}

export function withConfigTable(readme: string): string {
  const at = tableBounds(readme);
  if (!at) throw new Error(`README.md lacks the markers ${BEGIN} … ${END}`);
  const { begin, end } = at;
  return `${readme.slice(0, begin + BEGIN.length)}\n\n${configTable()}\n\n${readme.slice(end)}`;
}

/** The rows of the table between the README's markers, cells trimmed (for the drift test). */
export function readmeConfigRows(readme: string): string[][] {
  const at = tableBounds(readme);
  if (!at) return [];
  return readme
    .slice(at.begin + BEGIN.length, at.end)
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) =>
      l
        .trim()
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim().replace(/\\\|/g, '|')),
    );
}
