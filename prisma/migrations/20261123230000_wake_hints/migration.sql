-- CreateTable
CREATE TABLE "wake_hints" (
    "session_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "count" INTEGER NOT NULL,
    "event_types" TEXT[],
    "trigger_ids" TEXT[],
    "first_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "wake_hints_pkey" PRIMARY KEY ("session_id")
);

-- CreateIndex
CREATE INDEX "wake_hints_tenant_id_idx" ON "wake_hints"("tenant_id");

