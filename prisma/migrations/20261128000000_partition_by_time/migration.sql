-- The journal (events), the transcript (messages), the cost ledger (ledger_entries) and the post-turn
-- hook runs (hook_runs) become range-partitioned by time (docs/adr/0044-partitioning-by-time.md).
--
-- A partitioned table's primary and unique keys must include its partition key, and two unique keys
-- here are ON CONFLICT arbiters that carry exactly-once guarantees: hook_runs (turn_id, hook) and
-- ledger_entries (key). Those two tables are partitioned on turn_at, the creation time of the row's
-- turn, read from the turn id (a UUIDv7) by sb_uuid7_time(): every retry of a write computes the same
-- turn_at, so (turn_id, hook, turn_at) and (key, turn_at) mean what (turn_id, hook) and (key) meant.
-- events and messages are partitioned on their own created_at: their unique keys ((session_id, seq),
-- (session_id, turn_seq, position), (session_id, idempotency_key)) are unique indexes of each partition
-- (sb_partition_keys() below), since the values come from the session row's counters under its lock
-- and the admission's advisory lock, not from ON CONFLICT.
--
-- With pg_partman (Debian's postgresql-15-partman: scripts/partman.sh install) available to this
-- database, the four parents are registered with it (weekly children, four made ahead) before the
-- rows are copied, so rows land in real children: without it, each parent has only its DEFAULT
-- partition, which holds every row (a NOTICE says so). Run `scripts/partman.sh install` and the
-- harness' `partitions` maintenance task does the rest later (ADR 0044).

-- The millisecond timestamp of a UUIDv7 (RFC 9562: its first 48 bits): 'epoch' for any other version,
-- so the value is a pure function of the id (IMMUTABLE, usable as a partition key every retry agrees on).
CREATE FUNCTION "sb_uuid7_time"(id uuid) RETURNS timestamptz(3)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN substr(id::text, 15, 1) = '7'
    THEN to_timestamp(('x' || lpad(replace(substr(id::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint::float8 / 1000)
    ELSE 'epoch'::timestamptz END
$$;

-- The old tables step aside (their index and constraint names are reused below).
ALTER TABLE "events" RENAME TO "events_unpartitioned";
ALTER TABLE "events_unpartitioned" DROP CONSTRAINT "events_pkey", DROP CONSTRAINT "events_session_id_fkey";
DROP INDEX "events_session_id_seq_key";
DROP INDEX "events_turn_id_idx";

ALTER TABLE "messages" RENAME TO "messages_unpartitioned";
ALTER TABLE "messages_unpartitioned" DROP CONSTRAINT "messages_pkey", DROP CONSTRAINT "messages_session_id_fkey";
DROP INDEX "messages_session_id_idempotency_key_key";
DROP INDEX "messages_session_id_turn_seq_position_key";
DROP INDEX "messages_tenant_id_idx";

ALTER TABLE "ledger_entries" RENAME TO "ledger_entries_unpartitioned";
ALTER TABLE "ledger_entries_unpartitioned" DROP CONSTRAINT "ledger_entries_pkey";
DROP INDEX "ledger_entries_key_key";
DROP INDEX "ledger_entries_tenant_id_created_at_idx";
DROP INDEX "ledger_entries_turn_id_idx";

ALTER TABLE "hook_runs" RENAME TO "hook_runs_unpartitioned";
ALTER TABLE "hook_runs_unpartitioned" DROP CONSTRAINT "hook_runs_pkey";
DROP INDEX "hook_runs_deferred_idx";
DROP INDEX "hook_runs_tenant_id_idx";
DROP INDEX "hook_runs_turn_id_hook_key";

-- The partitioned parents: the same columns, defaults and foreign keys: keys widened by the partition key.
CREATE TABLE "events" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "turn_id" UUID,
    "seq" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "data" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "events_pkey" PRIMARY KEY ("id", "created_at")
) PARTITION BY RANGE ("created_at");
CREATE INDEX "events_turn_id_idx" ON "events"("turn_id");
ALTER TABLE "events" ADD CONSTRAINT "events_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "messages" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "turn_id" UUID,
    "turn_seq" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "role" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "origin" JSONB NOT NULL,
    "trust" TEXT NOT NULL,
    "authority_class" TEXT NOT NULL,
    "priority" TEXT NOT NULL DEFAULT 'normal',
    "delivery_surface" TEXT,
    "admission_context" TEXT,
    "body" JSONB NOT NULL,
    "tool_calls" JSONB,
    "tool_call_id" TEXT,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "correlation_id" TEXT,
    "causation_id" TEXT,
    "work_item_id" UUID,
    "task_id" UUID,
    "idempotency_key" TEXT,
    "idempotency_fingerprint" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "messages_pkey" PRIMARY KEY ("id", "created_at")
) PARTITION BY RANGE ("created_at");
CREATE INDEX "messages_tenant_id_idx" ON "messages"("tenant_id");
ALTER TABLE "messages" ADD CONSTRAINT "messages_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "ledger_entries" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "turn_id" UUID NOT NULL,
    "turn_at" TIMESTAMPTZ(3) NOT NULL,
    "key" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "input_tokens" INTEGER NOT NULL,
    "output_tokens" INTEGER NOT NULL,
    "cached_tokens" INTEGER NOT NULL DEFAULT 0,
    "cache_write_tokens" INTEGER NOT NULL DEFAULT 0,
    "cost_usd" DECIMAL(18,8) NOT NULL,
    "cache_saved_usd" DECIMAL(18,8) NOT NULL DEFAULT 0,
    "cost_source" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ledger_entries_pkey" PRIMARY KEY ("id", "turn_at")
) PARTITION BY RANGE ("turn_at");
CREATE UNIQUE INDEX "ledger_entries_key_turn_at_key" ON "ledger_entries"("key", "turn_at");
CREATE INDEX "ledger_entries_tenant_id_created_at_idx" ON "ledger_entries"("tenant_id", "created_at");
CREATE INDEX "ledger_entries_turn_id_idx" ON "ledger_entries"("turn_id");

CREATE TABLE "hook_runs" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "turn_id" UUID NOT NULL,
    "turn_at" TIMESTAMPTZ(3) NOT NULL,
    "hook" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "output" JSONB NOT NULL DEFAULT '{}',
    "attempts" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "hook_runs_pkey" PRIMARY KEY ("id", "turn_at")
) PARTITION BY RANGE ("turn_at");
CREATE UNIQUE INDEX "hook_runs_turn_id_hook_turn_at_key" ON "hook_runs"("turn_id", "hook", "turn_at");
CREATE INDEX "hook_runs_tenant_id_idx" ON "hook_runs"("tenant_id");
-- Partial index (migration SQL only): the archivist's deferred turns, which the hooks reconcile reads.
CREATE INDEX "hook_runs_deferred_idx" ON "hook_runs" ("created_at") WHERE "status" = 'deferred';

-- The unique keys of events and messages, on each partition (a partitioned table cannot have them on
-- the parent without the partition key): created on every leaf that lacks one, matched by definition,
-- so it is safe to call again. The migration calls it once: the harness' `partitions` maintenance task
-- calls it after pg_partman's maintenance, and pg_partman's template tables give new children the same
-- indexes when they are made. Returns how many indexes it created.
CREATE FUNCTION "sb_partition_keys"() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  k record;
  leaf regclass;
  made integer := 0;
BEGIN
  FOR k IN SELECT * FROM (VALUES
      ('events'::regclass, 'session_id, seq', 'sess_seq'),
      ('messages'::regclass, 'session_id, turn_seq, "position"', 'sess_turn_pos'),
      ('messages'::regclass, 'session_id, idempotency_key', 'sess_idem')) AS v(parent, cols, suffix)
  LOOP
    FOR leaf IN SELECT relid FROM pg_partition_tree(k.parent) WHERE isleaf LOOP
      IF NOT EXISTS (
        SELECT 1 FROM pg_index i
        WHERE i.indrelid = leaf AND i.indisunique AND i.indpred IS NULL
          AND substring(pg_get_indexdef(i.indexrelid) FROM ' USING btree \((.*)\)$') = k.cols
      ) THEN
        EXECUTE format('CREATE UNIQUE INDEX %I ON %s (%s)',
          left((SELECT relname FROM pg_class WHERE oid = leaf), 50) || '_' || k.suffix || '_key', leaf, k.cols);
        made := made + 1;
      END IF;
    END LOOP;
  END LOOP;
  RETURN made;
END
$$;

-- pg_partman when this database has it or may create it (a superuser, or the extension created
-- beforehand by scripts/partman.sh install): weekly children from the oldest row's week (at most two
-- years back: older rows stay in the default partition), four weeks made ahead, children always made
-- ahead of now (infinite_time_partitions) and no retention (PARTITION_RETENTION sets it, ADR 0044).
-- Otherwise a DEFAULT partition per parent holds every row.
DO $$
DECLARE
  has_partman boolean := EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_partman');
  t record;
  oldest timestamptz;
  ns text;
  template text;
BEGIN
  IF NOT has_partman AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_partman') THEN
    BEGIN
      CREATE SCHEMA IF NOT EXISTS partman;
      CREATE EXTENSION pg_partman SCHEMA partman;
      has_partman := true;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE NOTICE 'pg_partman is available but % may not create it: run scripts/partman.sh install', current_user;
    END;
  END IF;

  IF NOT has_partman THEN
    RAISE NOTICE 'pg_partman is not installed: events, messages, ledger_entries and hook_runs keep every row in their DEFAULT partition until it is (scripts/partman.sh install, ADR 0044)';
    CREATE TABLE "events_default" PARTITION OF "events" DEFAULT;
    CREATE TABLE "messages_default" PARTITION OF "messages" DEFAULT;
    CREATE TABLE "ledger_entries_default" PARTITION OF "ledger_entries" DEFAULT;
    CREATE TABLE "hook_runs_default" PARTITION OF "hook_runs" DEFAULT;
    RETURN;
  END IF;

  ns := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_partman');
  FOR t IN SELECT * FROM (VALUES
      ('events', 'created_at', (SELECT min(created_at) FROM "events_unpartitioned")),
      ('messages', 'created_at', (SELECT min(created_at) FROM "messages_unpartitioned")),
      ('ledger_entries', 'turn_at',
        (SELECT min(sb_uuid7_time(turn_id)) FROM "ledger_entries_unpartitioned" WHERE sb_uuid7_time(turn_id) > 'epoch')),
      ('hook_runs', 'turn_at',
        (SELECT min(sb_uuid7_time(turn_id)) FROM "hook_runs_unpartitioned" WHERE sb_uuid7_time(turn_id) > 'epoch'))
    ) AS v(name, control, oldest)
  LOOP
    oldest := CASE WHEN t.oldest IS NOT NULL THEN greatest(t.oldest, now() - interval '2 years') END;
    EXECUTE format(
      'SELECT %I.create_parent(p_parent_table := %L, p_control := %L, p_type := ''native'', p_interval := ''weekly'', p_premake := 4, p_start_partition := %L, p_jobmon := false)',
      ns, 'public.' || t.name, t.control,
      CASE WHEN oldest < now() - interval '4 weeks' THEN to_char(oldest, 'YYYY-MM-DD HH24:MI:SSOF') END);
  END LOOP;
  EXECUTE format('UPDATE %I.part_config SET infinite_time_partitions = true, retention_keep_table = true WHERE parent_table IN (''public.events'', ''public.messages'', ''public.ledger_entries'', ''public.hook_runs'')', ns);
  -- New children get the per-partition unique keys from pg_partman's template tables.
  FOR t IN SELECT * FROM (VALUES
      ('events', 'session_id, seq'),
      ('messages', 'session_id, turn_seq, "position"'),
      ('messages', 'session_id, idempotency_key')) AS v(name, cols)
  LOOP
    EXECUTE format('SELECT template_table FROM %I.part_config WHERE parent_table = %L', ns, 'public.' || t.name)
      INTO template;
    EXECUTE format('CREATE UNIQUE INDEX ON %s (%s)', template, t.cols);
  END LOOP;
END
$$;

SELECT "sb_partition_keys"();

-- The rows, routed to their children (or the default partition).
INSERT INTO "events" ("id", "tenant_id", "session_id", "turn_id", "seq", "type", "data", "created_at")
SELECT "id", "tenant_id", "session_id", "turn_id", "seq", "type", "data", "created_at" FROM "events_unpartitioned";
INSERT INTO "messages" ("id", "tenant_id", "agent_id", "session_id", "turn_id", "turn_seq", "position", "role", "kind",
  "origin", "trust", "authority_class", "priority", "delivery_surface", "admission_context", "body", "tool_calls",
  "tool_call_id", "metadata", "correlation_id", "causation_id", "work_item_id", "task_id", "idempotency_key",
  "idempotency_fingerprint", "created_at")
SELECT "id", "tenant_id", "agent_id", "session_id", "turn_id", "turn_seq", "position", "role", "kind",
  "origin", "trust", "authority_class", "priority", "delivery_surface", "admission_context", "body", "tool_calls",
  "tool_call_id", "metadata", "correlation_id", "causation_id", "work_item_id", "task_id", "idempotency_key",
  "idempotency_fingerprint", "created_at" FROM "messages_unpartitioned";
INSERT INTO "ledger_entries" ("id", "tenant_id", "agent_id", "session_id", "turn_id", "turn_at", "key", "provider",
  "model", "input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens", "cost_usd", "cache_saved_usd",
  "cost_source", "created_at")
SELECT "id", "tenant_id", "agent_id", "session_id", "turn_id", sb_uuid7_time("turn_id"), "key", "provider",
  "model", "input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens", "cost_usd", "cache_saved_usd",
  "cost_source", "created_at" FROM "ledger_entries_unpartitioned";
INSERT INTO "hook_runs" ("id", "tenant_id", "turn_id", "turn_at", "hook", "status", "output", "attempts",
  "created_at", "completed_at")
SELECT "id", "tenant_id", "turn_id", sb_uuid7_time("turn_id"), "hook", "status", "output", "attempts",
  "created_at", "completed_at" FROM "hook_runs_unpartitioned";

DROP TABLE "events_unpartitioned";
DROP TABLE "messages_unpartitioned";
DROP TABLE "ledger_entries_unpartitioned";
DROP TABLE "hook_runs_unpartitioned";

ANALYZE "events", "messages", "ledger_entries", "hook_runs";
