-- Operator control and the audit log (docs/adr/0030). A pause sets the existing kill switch and
-- records when and why. audit_events keeps one row per security-relevant change, newest first per
-- tenant (and across tenants for the operator). The partial index on turns holds only unfinished
-- ones, so the operator's live turn counts per tenant read a small index however long the history is.
-- AlterTable
ALTER TABLE "tenants" ADD COLUMN     "pause_reason" TEXT,
ADD COLUMN     "paused_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "audit_events" (
    "id" UUID NOT NULL,
    "tenant_id" UUID,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target_type" TEXT NOT NULL,
    "target_id" TEXT,
    "details" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "audit_events_tenant_id_created_at_id_idx" ON "audit_events"("tenant_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "audit_events_created_at_id_idx" ON "audit_events"("created_at" DESC, "id" DESC);

-- Partial index (migration SQL only, see the Turn model)
CREATE INDEX "turns_tenant_unfinished_idx" ON "turns" ("tenant_id", "status")
  WHERE "status" IN ('queued', 'running', 'awaiting_approval', 'awaiting_subagent');
