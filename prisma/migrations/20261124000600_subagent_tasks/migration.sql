-- Sub-agent runs (issue 11, docs/adr/0024): a task row links a parent turn's spawn call to the child
-- session and turn that run it.

-- AlterTable
ALTER TABLE "tasks" ADD COLUMN "call_id" TEXT,
ADD COLUMN "child_turn_id" UUID,
ADD COLUMN "blocking" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN "agent_name" TEXT NOT NULL DEFAULT '',
ADD COLUMN "cost_usd" DECIMAL(18,8) NOT NULL DEFAULT 0,
ADD COLUMN "parent_session_id" UUID,
ADD COLUMN "parent_notified_at" TIMESTAMPTZ(3),
ADD COLUMN "closed_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "sessions" ADD COLUMN "parent_session_id" UUID;

-- A re-run of the parent's spawn call never makes a second child.
CREATE UNIQUE INDEX "tasks_parent_turn_id_call_id_key" ON "tasks"("parent_turn_id", "call_id");

CREATE INDEX "tasks_child_turn_id_idx" ON "tasks"("child_turn_id");

-- Reusable child sessions: a parent session's children by agent.
CREATE INDEX "sessions_parent_session_id_agent_id_idx" ON "sessions"("parent_session_id", "agent_id");
