-- AlterTable
ALTER TABLE "trigger_deliveries" ADD COLUMN     "decided_at" TIMESTAMPTZ(3),
ADD COLUMN     "decision_cost_usd" DECIMAL(18,8) NOT NULL DEFAULT 0,
ADD COLUMN     "decision_model" TEXT,
ADD COLUMN     "decision_source" TEXT,
ADD COLUMN     "fingerprint" TEXT;

-- CreateTable
CREATE TABLE "outbound_webhook_attempts" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "webhook_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "attempt" INTEGER NOT NULL,
    "status" INTEGER,
    "error" TEXT,
    "duration_ms" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "outbound_webhook_attempts_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "outbound_webhook_attempts_tenant_id_created_at_idx" ON "outbound_webhook_attempts"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "outbound_webhook_attempts_webhook_id_idx" ON "outbound_webhook_attempts"("webhook_id");

-- CreateIndex
CREATE INDEX "trigger_deliveries_trigger_id_fingerprint_decided_at_idx" ON "trigger_deliveries"("trigger_id", "fingerprint", "decided_at");

