-- Work items (seed 002, docs/adr/0031). The init migration placeholder table was never written by
-- anything: it is replaced by the shape of seed 002. The agent gets its current work item and the standing
-- session its system ticks run in, and a turn records the work item it was bound to when it began.
DROP TABLE "work_items";

-- CreateTable
CREATE TABLE "work_items" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "position" BIGSERIAL NOT NULL,
    "objective" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'open',
    "plan_status" TEXT NOT NULL DEFAULT 'ready',
    "plan" TEXT,
    "todo_list" JSONB NOT NULL DEFAULT '[]',
    "blocked_by" TEXT,
    "recheck_at" TIMESTAMPTZ(3),
    "recheck_consumed_at" TIMESTAMPTZ(3),
    "result_summary" TEXT,
    "created_by" TEXT NOT NULL,
    "created_turn_id" UUID,
    "idempotency_key" TEXT,
    "closed_by" TEXT,
    "closed_turn_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "work_items_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "work_items_tenant_id_idempotency_key_key" ON "work_items"("tenant_id", "idempotency_key");

-- CreateIndex
CREATE INDEX "work_items_tenant_id_agent_id_state_position_idx" ON "work_items"("tenant_id", "agent_id", "state", "position");

-- Partial index (migration SQL only, see the WorkItem model): due rechecks.
CREATE INDEX "work_items_recheck_due_idx" ON "work_items" ("recheck_at")
  WHERE "state" = 'open' AND "blocked_by" IS NOT NULL AND "recheck_consumed_at" IS NULL;

-- AddForeignKey
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AlterTable
ALTER TABLE "agents" ADD COLUMN     "current_work_item_id" UUID,
ADD COLUMN     "work_session_id" UUID;

-- AlterTable
ALTER TABLE "turns" ADD COLUMN     "work_item_id" UUID;
