-- Reads of one session that walked all of its turns (issue 37, docs/adr/0083). A turn's cost grew
-- with its session's length: at 160 turns a session, Postgres spent 43 ms of CPU a turn against 22 ms
-- at 20.

-- Sessions held by a waiting turn. Migration 20261206010000_client_tools added a third waiting status
-- (`awaiting_client_tool`) but left this index at two, so the fair choice's "no waiting turn in this
-- session" test no longer matched its predicate and read every turn of the session instead.
DROP INDEX IF EXISTS "turns_waiting_session_idx";
CREATE INDEX "turns_waiting_session_idx" ON "turns" ("session_id")
  WHERE "status" IN ('awaiting_approval', 'awaiting_subagent', 'awaiting_client_tool');

-- The archivist's deferred turns of a session (docs/adr/0032), counted after every deferral and read
-- by the session's distillation, were found through the session's turns, all of them. A deferred row
-- now carries its turn's session, and a partial index holds the deferred rows only.
ALTER TABLE "hook_runs" ADD COLUMN "session_id" UUID;
UPDATE "hook_runs" h SET "session_id" = t."session_id"
  FROM "turns" t WHERE h."status" = 'deferred' AND t."id" = h."turn_id";
CREATE INDEX "hook_runs_deferred_session_idx" ON "hook_runs" ("session_id") WHERE "status" = 'deferred';
