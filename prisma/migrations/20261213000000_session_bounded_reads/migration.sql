-- Reads of one session that walked all of its turns (issue 37, docs/adr/0083). A turn's cost grew
-- with its session's length: at 160 turns a session, Postgres spent 36–43 ms of CPU a turn against
-- 22 ms at 20 (no analyze).

-- The turns that hold a session (unfinished or waiting), by session. Every "does this session have
-- an unfinished / a waiting turn" probe (the fair choice, the claim, the final checkpoint's lease
-- release, the drain, fork) reads this index's few rows. Before, only the waiting statuses had one,
-- and migration 20261206010000_client_tools added a third waiting status (`awaiting_client_tool`)
-- without it, so those probes read every turn of the session by (session_id, seq).
DROP INDEX IF EXISTS "turns_waiting_session_idx";
CREATE INDEX "turns_holding_session_idx" ON "turns" ("session_id", "status")
  WHERE "status" IN ('queued', 'running', 'awaiting_approval', 'awaiting_subagent', 'awaiting_client_tool');

-- The archivist's deferred turns of a session (docs/adr/0032), counted after every deferral and read
-- by the session's distillation, were found through the session's turns, all of them. A deferred row
-- now carries its turn's session, and a partial index holds the deferred rows only.
ALTER TABLE "hook_runs" ADD COLUMN "session_id" UUID;
UPDATE "hook_runs" h SET "session_id" = t."session_id"
  FROM "turns" t WHERE h."status" = 'deferred' AND t."id" = h."turn_id";
CREATE INDEX "hook_runs_deferred_session_idx" ON "hook_runs" ("session_id") WHERE "status" = 'deferred';
