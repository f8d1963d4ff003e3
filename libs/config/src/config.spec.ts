import { ConfigError, hashTag, loadConfig } from './config';

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected loadConfig to throw a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults to an empty environment', () => {
    expect(loadConfig({})).toEqual({
      NODE_ENV: 'development',
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/switchboard',
      DATABASE_PREPARED_STATEMENTS: true,
      DATABASE_POOL_IDLE_MS: 300_000,
      READ_REPLICA_MAX_WAIT_MS: 100,
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: 'sb',
      PORT: 3000,
      PROVIDER_TIMEOUT_MS: 120_000,
      PROVIDER_STREAM_IDLE_MS: 60_000,
      PROVIDER_ATTEMPT_TIMEOUT_MS: 600_000,
      CHECKPOINT_RETRY_MS: 30_000,
      APPROVAL_TTL_MS: 86_400_000,
      ACTION_BUDGET_WINDOW_MS: 3_600_000,
      HOST: '0.0.0.0',
      LOG_LEVEL: 'info',
      BODY_LIMIT_BYTES: 1_048_576,
      DEFAULT_MODEL: 'scripted/demo',
      ENCRYPTION_DEFAULT_MODE: 'off',
      RATE_LIMIT_ADMISSION_PER_MIN: 600,
      RATE_LIMIT_READS_PER_MIN: 3_000,
      RATE_LIMIT_WRITES_PER_MIN: 600,
      RATE_LIMIT_WEBHOOKS_PER_MIN: 600,
      ADMISSION_CONCURRENCY_PER_TENANT: 8,
      ADMISSION_CONCURRENCY_PER_TENANT_CONTENDED: 2,
      HARNESS_CONCURRENCY: 32,
      HARNESS_LOOP_DELAY_TARGET_MS: 10,
      HARNESS_INTAKE_POLL_MS: 250,
      TENANT_MAX_CONCURRENT_TURNS: 0,
      TOKENJUICE_MAX_INPUT_CHARS: 262_144,
      TOKENJUICE_MIN_BYTES: 2048,
      TOKENJUICE_RETENTION_HOURS: 168,
      TOKENJUICE_SWEEP_MS: 3_600_000,
      PARTITION_MAINTENANCE_MS: 3_600_000,
      RETENTION_INTERVAL_MS: 3_600_000,
      HOOKS_CONCURRENCY: 16,
      HOOKS_MAX_STALLED_COUNT: 10,
      HOOKS_RECONCILE_GRACE_MS: 10_000,
      HOOKS_BATCH_WINDOW_MS: 50,
      TRIAGE_CONCURRENCY: 16,
      VAULT_TRANSIT_MOUNT: 'transit',
      TRIAGE_CACHE_TTL_MS: 600_000,
      OUTBOUND_WEBHOOK_TIMEOUT_MS: 10_000,
      OUTBOUND_WEBHOOK_BACKOFF_MS: 5_000,
      EVAL_DAILY_BUDGET_USD: 10,
      WAIT_TIMEOUT_MS: 60_000,
      WORK_ITEM_RECHECK_MS: 3_600_000,
      WORK_TICK_MAX_IDLE: 3,
      WORK_ITEM_STALE_REMINDER_ROUNDS: 8,
      WORK_ITEM_STALE_REMINDER_COOLDOWN_ROUNDS: 4,
      WORK_ITEM_STALE_REMINDER_MAX_TOKENS: 400,
      LIVE_DELTA_FLUSH_MS: 30,
      ROUND_CONTEXTS: 'on',
      RECALL_TIMEOUT_MS: 250,
      RECALL_LIMIT: 5,
      RECALL_CANDIDATES: 250,
      MCP_TOOLS_TTL_MS: 300_000,
      SSE_HEARTBEAT_MS: 15_000,
      RESPONSES_WEBSOCKET_MAX_MS: 3_600_000,
      API_KEY_CACHE_MS: 5_000,
      SESSION_LEASE_MS: 30_000,
      QUEUE_BOARD_ACTIONS: false,
      QUEUE_LOCK_MS: 30_000,
      QUEUE_STALLED_INTERVAL_MS: 30_000,
      RECONCILE_INTERVAL_MS: 60_000,
      CANARY_EVAL_INTERVAL_MS: 10_000,
      LEASE_SWEEP_MS: 5_000,
      SCHEDULE_MIN_INTERVAL_MS: 1000,
      METRICS_PORT: 0,
      SHUTDOWN_GRACE_MS: 25_000,
      CONSOLE_DIST_DIR: 'apps/console/dist',
      HARNESS_HEARTBEAT_MS: 5_000,
      HARNESS_HEARTBEAT_TTL_MS: 15_000,
      OTEL_SDK_DISABLED: false,
    });
  });

  it('reads HTTP_FETCH_ALLOW_HOSTS as a list of names, IPs and CIDR ranges', () => {
    expect(
      loadConfig({ HTTP_FETCH_ALLOW_HOSTS: ' localhost, 10.0.0.0/8,[::1],intranet.example. ' })
        .HTTP_FETCH_ALLOW_HOSTS,
    ).toEqual(['localhost', '10.0.0.0/8', '[::1]', 'intranet.example.']);
    expect(loadConfig({}).HTTP_FETCH_ALLOW_HOSTS).toBeUndefined();
  });

  it('parses the values it is given, coercing numbers', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://u:p@db:5432/sb',
      DATABASE_READ_URL: 'postgres://u:p@db-replica:5432/sb',
      READ_REPLICA_MAX_WAIT_MS: '250',
      DATABASE_POOL_IDLE_MS: '0',
      REDIS_URL: 'rediss://cache:6380',
      PORT: '8080',
      ADMIN_TOKEN: 'x'.repeat(16),
      LOG_LEVEL: 'debug',
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: 'http://localhost:11434/v1',
      DEFAULT_MODEL: 'openai-chat/llama3',
      HARNESS_CONCURRENCY: '4',
      METRICS_PORT: '9464',
      MODEL_CONTEXT_WINDOWS: '{"openai-chat/llama3": 8192}',
      MODEL_PRICES:
        '{"openai-chat/llama3": {"input": 0, "output": 0}, "openai/gpt-5": {"input": 1, "output": 8, "cachedInput": 0.1}}',
    });
    expect(config).toMatchObject({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://u:p@db:5432/sb',
      DATABASE_READ_URL: 'postgres://u:p@db-replica:5432/sb',
      READ_REPLICA_MAX_WAIT_MS: 250,
      DATABASE_POOL_IDLE_MS: 0,
      REDIS_URL: 'rediss://cache:6380',
      PORT: 8080,
      ADMIN_TOKEN: 'xxxxxxxxxxxxxxxx',
      LOG_LEVEL: 'debug',
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: 'http://localhost:11434/v1',
      DEFAULT_MODEL: 'openai-chat/llama3',
      HARNESS_CONCURRENCY: 4,
      METRICS_PORT: 9464,
      MODEL_CONTEXT_WINDOWS: { 'openai-chat/llama3': 8192 },
      MODEL_PRICES: {
        'openai-chat/llama3': { input: 0, output: 0 },
        'openai/gpt-5': { input: 1, output: 8, cachedInput: 0.1 },
      },
    });
  });

  it('treats empty strings as unset', () => {
    const config = loadConfig({
      PORT: '',
      DATABASE_URL: '',
      ADMIN_TOKEN: '',
      OPENAI_BASE_URL: '',
      NODE_ENV: '',
    });
    expect(config.PORT).toBe(3000);
    expect(config.DATABASE_URL).toBe('postgresql://postgres@127.0.0.1:5432/switchboard');
    expect(config.NODE_ENV).toBe('development');
    expect(config).not.toHaveProperty('ADMIN_TOKEN');
    expect(config).not.toHaveProperty('OPENAI_BASE_URL');
  });

  it('ignores unrelated environment variables', () => {
    const config = loadConfig({ PATH: '/usr/bin', HOME: '/root' });
    expect(config).not.toHaveProperty('PATH');
    expect(config).not.toHaveProperty('HOME');
  });

  it.each([
    ['true', true],
    ['false', false],
  ])('reads OTEL_SDK_DISABLED=%s as %p', (raw, expected) => {
    expect(loadConfig({ OTEL_SDK_DISABLED: raw }).OTEL_SDK_DISABLED).toBe(expected);
  });

  it.each(['1', 'yes', 'TRUE'])('rejects OTEL_SDK_DISABLED=%s', (raw) => {
    expect(configError({ OTEL_SDK_DISABLED: raw }).issues.map((i) => i.variable)).toEqual([
      'OTEL_SDK_DISABLED',
    ]);
  });

  it.each([
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_READ_URL', 'mysql://replica'],
    ['DATABASE_READ_URL', 'replica:5432'],
    ['READ_REPLICA_MAX_WAIT_MS', '-1'],
    ['READ_REPLICA_MAX_WAIT_MS', '10001'],
    ['READ_REPLICA_MAX_WAIT_MS', '2.5'],
    ['DATABASE_POOL_IDLE_MS', '-1'],
    ['DATABASE_POOL_IDLE_MS', '1.5'],
    ['DATABASE_POOL_IDLE_MS', 'ten minutes'],
    ['DATABASE_POOL_IDLE_MS', '86400001'],
    ['REDIS_URL', 'http://cache:6379'],
    ['REDIS_CLUSTER_NODES', 'cache-1'],
    ['REDIS_CLUSTER_NODES', 'cache-1:7000,cache-2'],
    ['REDIS_CLUSTER_NODES', 'cache-1:0'],
    ['REDIS_CLUSTER_NODES', 'cache-1:70000'],
    ['REDIS_CLUSTER_NODES', 'redis://cache-1:7000'],
    ['REDIS_CLUSTER_NODES', 'cache-1:7000,,cache-2:7001'],
    ['OPENAI_BASE_URL', 'ftp://example.com'],
    ['ANTHROPIC_BASE_URL', 'localhost:8080'],
    ['PORT', 'abc'],
    ['PORT', '0'],
    ['PORT', '80.5'],
    ['ADMIN_TOKEN', 'short'],
    ['NODE_ENV', 'staging'],
    ['LOG_LEVEL', 'verbose'],
    ['BODY_LIMIT_BYTES', '512'],
    ['SESSION_LEASE_MS', '100'],
    ['HARNESS_CONCURRENCY', '0'],
    ['METRICS_PORT', '-1'],
    ['DEFAULT_MODEL', 'gpt-4o'],
    ['PROVIDER_TIMEOUT_MS', '10'],
    ['PROVIDER_STREAM_IDLE_MS', '0'],
    ['PROVIDER_ATTEMPT_TIMEOUT_MS', 'soon'],
    ['CHECKPOINT_RETRY_MS', '-5'],
    ['WAIT_TIMEOUT_MS', '-1'],
    ['RECALL_CANDIDATES', '0'],
    ['ROUND_CONTEXTS', 'yes'],
    ['RECALL_CANDIDATES', '1001'],
    ['EXTRA_TOOL_MODULES', '/no/such/tools.ts'],
    ['HTTP_FETCH_ALLOW_HOSTS', 'localhost,10.0.0.0/33'],
    ['HTTP_FETCH_ALLOW_HOSTS', 'intranet/8'],
    ['HTTP_FETCH_ALLOW_HOSTS', 'http://localhost'],
    ['MODEL_CONTEXT_WINDOWS', 'not json'],
    ['MODEL_CONTEXT_WINDOWS', '[8192]'],
    ['MODEL_CONTEXT_WINDOWS', '{"llama3": 8192}'],
    ['MODEL_CONTEXT_WINDOWS', '{"openai-chat/llama3": 10}'],
    ['MODEL_PRICES', 'not json'],
    ['MODEL_PRICES', '{"gpt-5": {"input": 1, "output": 1}}'],
    ['MODEL_PRICES', '{"openai/gpt-5": {"input": -1, "output": 1}}'],
    ['MODEL_PRICES', '{"openai/gpt-5": {"input": 1}}'],
    ['MODEL_PRICES', '{"openai/gpt-5": {"input": 1, "output": 1, "per": "token"}}'],
    ['PARTITION_RETENTION', '90'],
    ['PARTITION_RETENTION', '1 fortnight'],
    ['PARTITION_RETENTION', "90 days'; DROP TABLE events; --"],
  ])('rejects %s=%p with a ConfigError naming the variable', (variable, value) => {
    const err = configError({ [variable]: value });
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.name).toBe('ConfigError');
    expect(err.issues.map((i) => i.variable)).toEqual([variable]);
    expect(err.message).toContain(`${variable}: `);
  });

  it('takes PARTITION_RETENTION as a Postgres interval (docs/adr/0044)', () => {
    expect(loadConfig({ PARTITION_RETENTION: '90 days' }).PARTITION_RETENTION).toBe('90 days');
    expect(loadConfig({ PARTITION_RETENTION: '1 year' }).PARTITION_RETENTION).toBe('1 year');
  });

  describe('REDIS_CLUSTER_NODES', () => {
    it('parses host:port seed nodes, IPv6 in brackets too', () => {
      const config = loadConfig({
        REDIS_CLUSTER_NODES: 'cache-1:7000, 10.0.0.2:7001,[::1]:7002',
        QUEUE_PREFIX: '{sb}',
      });
      expect(config.REDIS_CLUSTER_NODES).toEqual([
        { host: 'cache-1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ]);
      expect(config.QUEUE_PREFIX).toBe('{sb}');
      expect(loadConfig({}).REDIS_CLUSTER_NODES).toBeUndefined();
    });

    it.each(['sb', '{}sb', 'sb{', 'sb}{'])(
      'refuses QUEUE_PREFIX=%p without a hash tag on a cluster',
      (prefix) => {
        const err = configError({ REDIS_CLUSTER_NODES: 'cache-1:7000', QUEUE_PREFIX: prefix });
        expect(err.issues.map((i) => i.variable)).toEqual(['QUEUE_PREFIX']);
        expect(err.message).toContain('QUEUE_PREFIX: must carry a Redis Cluster hash tag, e.g. {sb}');
      },
    );

    it.each([
      ['{sb}', 'sb'],
      ['{sb:prod}', 'sb:prod'],
      ['app-{sb}', 'sb'],
      ['{a}{b}', 'a'],
      ['sb', undefined],
      ['{}', undefined],
      ['}{', undefined],
    ])('hashTag(%p) is %p', (prefix, tag) => {
      expect(hashTag(prefix)).toBe(tag);
    });

    it('accepts a prefix without a hash tag on one Redis', () => {
      expect(loadConfig({ QUEUE_PREFIX: 'sb' }).QUEUE_PREFIX).toBe('sb');
    });
  });

  it('explains what is wrong', () => {
    expect(configError({ DATABASE_URL: 'mysql://x' }).message).toContain(
      'DATABASE_URL: must be a URL with scheme postgres: or postgresql:',
    );
    expect(configError({ ADMIN_TOKEN: 'short' }).message).toContain(
      'ADMIN_TOKEN: must be at least 16 characters',
    );
  });

  it('reports every invalid variable at once', () => {
    const err = configError({ PORT: 'abc', REDIS_URL: 'nope', ADMIN_TOKEN: 'short' });
    expect(err.issues.map((i) => i.variable).sort()).toEqual(['ADMIN_TOKEN', 'PORT', 'REDIS_URL']);
    expect(err.message).toMatch(/^Invalid configuration:\n/);
  });
});
