-- Task results rejoin their parent (docs/adr/0057, seed 002 "Background Task Model"): how an ended
-- sub-agent task's handback reached its parent session, once, and the continuation resolution of a
-- turn (seed 002 "Continuation Resolution").
--
-- rejoin: waiting_turn (a parent turn waited for it and resumed with it), tool_call (a parent call
-- answered with it: wait_subagent on an ended task, list_subagents), task_result (a `task_result`
-- message was admitted into the parent's session: rejoin_message_id / rejoin_turn_id), skipped (the
-- parent closed it, the spawning turn was cancelled, or the parent's own stop cascaded into it).
-- NULL: not yet (an open task, or an ended one whose spawning turn is still unfinished).
ALTER TABLE "tasks" ADD COLUMN "rejoin" TEXT,
  ADD COLUMN "rejoined_at" TIMESTAMPTZ(3),
  ADD COLUMN "rejoin_message_id" UUID,
  ADD COLUMN "rejoin_turn_id" UUID;
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_rejoin_check"
  CHECK ("rejoin" IS NULL OR "rejoin" IN ('waiting_turn', 'tool_call', 'task_result', 'skipped'));

-- Tasks that ended before this change were delivered the old way (or not at all): never re-driven now.
UPDATE "tasks" SET "rejoin" = 'skipped', "rejoined_at" = now()
  WHERE "status" NOT IN ('pending', 'running');

-- The async tasks whose result has not rejoined yet: the closure's `awaiting_task_result` probe (per
-- parent session, on every turn end) and the tasks sweep read only these.
CREATE INDEX "tasks_rejoin_pending_idx" ON "tasks" ("parent_session_id")
  WHERE "rejoin" IS NULL AND "closed_at" IS NULL AND NOT "blocking";

-- Which waiting reason the turn's input matched (seed 002 "Continuation Resolution"), derived at its
-- first claim from the closure of the session's turn before it; NULL when that one was not waiting.
ALTER TABLE "turns" ADD COLUMN "continuation" JSONB;
