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
-- The rows are copied into each parent's DEFAULT partition. With pg_partman (Debian's
-- postgresql-15-partman: scripts/partman.sh install) available to this database, the four parents are
-- then registered with it (weekly children from the oldest row's week, four made ahead) and the rows
-- moved into the children (sb_partition_register(), the same path `scripts/partman.sh install` takes
-- later). Without it every row stays in the DEFAULT partition (a NOTICE says so). The harness'
-- `partitions` maintenance task keeps the children coming (ADR 0044).

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

-- Registers each of the four parents with pg_partman when this database has it and it has not been
-- registered yet: weekly children from the oldest row's week (at most two years back, older rows stay
-- in the default partition), four weeks made ahead, children always made ahead of now
-- (infinite_time_partitions), detached rather than dropped by a retention (retention_keep_table), and
-- the per-partition unique keys on pg_partman's template table so new children are born with them. The
-- rows of a parent's default partition are moved into the children: its old default is detached, the
-- parent registered, the rows inserted again (one transaction, so run it in a quiet moment on a big
-- table). Without pg_partman, each parent gets a DEFAULT partition that holds every row. Safe to call
-- again (scripts/partman.sh install calls it after creating the extension). Returns the parents registered.
CREATE FUNCTION "sb_partition_register"() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  ns text := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
              WHERE e.extname = 'pg_partman');
  t record;
  registered boolean;
  old_default text;
  oldest timestamptz;
  template text;
  made integer := 0;
BEGIN
  FOR t IN SELECT * FROM (VALUES
      ('events', 'created_at', ARRAY['session_id, seq']),
      ('messages', 'created_at', ARRAY['session_id, turn_seq, "position"', 'session_id, idempotency_key']),
      ('ledger_entries', 'turn_at', ARRAY[]::text[]),
      ('hook_runs', 'turn_at', ARRAY[]::text[])) AS v(name, control, uniques)
  LOOP
    IF ns IS NULL THEN
      IF NOT EXISTS (SELECT 1 FROM pg_partition_tree(t.name::regclass) WHERE isleaf) THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', t.name || '_default', t.name);
      END IF;
      CONTINUE;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.part_config WHERE parent_table = %L)', ns, 'public.' || t.name)
      INTO registered;
    CONTINUE WHEN registered;
    old_default := (SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                    WHERE i.inhparent = t.name::regclass AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT');
    IF old_default IS NOT NULL THEN
      EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', t.name, old_default);
      EXECUTE format('ALTER TABLE %I RENAME TO %I', old_default, t.name || '_unregistered');
      old_default := t.name || '_unregistered';
      EXECUTE format('SELECT min(%I) FROM %I WHERE %I > %L', t.control, old_default, t.control, 'epoch')
        INTO oldest;
    ELSE
      oldest := NULL;
    END IF;
    oldest := CASE WHEN oldest IS NOT NULL THEN greatest(oldest, now() - interval '2 years') END;
    EXECUTE format(
      'SELECT %I.create_parent(p_parent_table := %L, p_control := %L, p_type := %L, p_interval := %L, '
      'p_premake := 4, p_start_partition := %L, p_jobmon := false)',
      ns, 'public.' || t.name, t.control, 'native', 'weekly',
      CASE WHEN oldest < now() - interval '4 weeks' THEN to_char(oldest, 'YYYY-MM-DD HH24:MI:SSOF') END);
    EXECUTE format('UPDATE %I.part_config SET infinite_time_partitions = true, retention_keep_table = true '
      'WHERE parent_table = %L RETURNING template_table', ns, 'public.' || t.name) INTO template;
    FOR i IN 1 .. coalesce(array_length(t.uniques, 1), 0) LOOP
      EXECUTE format('CREATE UNIQUE INDEX ON %s (%s)', template, t.uniques[i]);
    END LOOP;
    IF old_default IS NOT NULL THEN
      EXECUTE format('INSERT INTO %I SELECT * FROM %I', t.name, old_default);
      EXECUTE format('DROP TABLE %I', old_default);
    END IF;
    made := made + 1;
  END LOOP;
  PERFORM "sb_partition_keys"();
  RETURN made;
END
$$;

-- One pass of partition upkeep, run by the harness' `partitions` maintenance task (about hourly) and by
-- scripts/partman.sh maintain: under a transaction-scoped advisory lock (one caller at a time, whatever
-- pools or bouncers are between), sets the retention of the four parents (NULL: keep everything; else
-- a Postgres interval, e.g. '90 days': children wholly older are detached, kept as tables, for an
-- operator to archive and drop), runs pg_partman's maintenance (children made ahead, old ones retired)
-- and makes the per-partition unique keys any child lacks, waiting at most 2 s for a table lock. Without
-- pg_partman it only does the last.
-- Returns what it did as JSON: {ran, reason?, partitions, created, detached, keys}.
CREATE FUNCTION "sb_partition_maintenance"(p_retention text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  ns text := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
              WHERE e.extname = 'pg_partman');
  parents regclass[] := ARRAY['events', 'messages', 'ledger_entries', 'hook_runs']::regclass[];
  before oid[];
  after oid[];
  keys integer;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('sb_partition_maintenance')) THEN
    RETURN jsonb_build_object('ran', false, 'reason', 'locked');
  END IF;
  -- Making or detaching a child locks its parent exclusively: behind a long transaction that request
  -- would queue every insert of the table behind it. Give up after 2 s instead (the next pass retries).
  PERFORM set_config('lock_timeout', '2s', true);
  IF ns IS NULL THEN
    keys := "sb_partition_keys"();
    RETURN jsonb_build_object('ran', false, 'reason', 'no_partman', 'keys', keys);
  END IF;
  PERFORM "sb_partition_register"();
  SELECT array_agg(t.relid) INTO before FROM unnest(parents) p, pg_partition_tree(p) t WHERE t.isleaf;
  EXECUTE format('UPDATE %I.part_config SET retention = %L, retention_keep_table = true '
    'WHERE parent_table IN (%L, %L, %L, %L) AND (retention IS DISTINCT FROM %L OR NOT retention_keep_table)',
    ns, p_retention, 'public.events', 'public.messages', 'public.ledger_entries', 'public.hook_runs', p_retention);
  EXECUTE format('SELECT %I.run_maintenance(p_analyze := false)', ns);
  keys := "sb_partition_keys"();
  SELECT array_agg(t.relid) INTO after FROM unnest(parents) p, pg_partition_tree(p) t WHERE t.isleaf;
  RETURN jsonb_build_object('ran', true, 'partitions', cardinality(after),
    'created', (SELECT count(*) FROM unnest(after) a WHERE a <> ALL (before)),
    'detached', (SELECT count(*) FROM unnest(before) b WHERE b <> ALL (after)),
    'keys', keys);
END
$$;

-- pg_partman when this database has it or may create it (a superuser, or the extension created
-- beforehand by scripts/partman.sh install), else the default partitions, with a NOTICE.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_partman')
     AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_partman') THEN
    BEGIN
      CREATE SCHEMA IF NOT EXISTS partman;
      CREATE EXTENSION pg_partman SCHEMA partman;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE NOTICE 'pg_partman is available but % may not create it: run scripts/partman.sh install', current_user;
    END;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_partman') THEN
    RAISE NOTICE 'pg_partman is not installed: events, messages, ledger_entries and hook_runs keep every row in their DEFAULT partition until it is (scripts/partman.sh install, ADR 0044)';
  END IF;
END
$$;

-- Every row into the default partitions first, then registered with pg_partman (which moves them into
-- the children) or left there.
CREATE TABLE "events_default" PARTITION OF "events" DEFAULT;
CREATE TABLE "messages_default" PARTITION OF "messages" DEFAULT;
CREATE TABLE "ledger_entries_default" PARTITION OF "ledger_entries" DEFAULT;
CREATE TABLE "hook_runs_default" PARTITION OF "hook_runs" DEFAULT;

-- The rows.
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

SELECT "sb_partition_register"();

DROP TABLE "events_unpartitioned";
DROP TABLE "messages_unpartitioned";
DROP TABLE "ledger_entries_unpartitioned";
DROP TABLE "hook_runs_unpartitioned";

ANALYZE "events", "messages", "ledger_entries", "hook_runs";
