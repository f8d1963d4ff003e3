-- CreateTable
CREATE TABLE "memory_records" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "dedupe_key" TEXT NOT NULL,
    "provenance" JSONB NOT NULL DEFAULT '{}',
    "search" tsvector NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "memory_records_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "memory_records_agent_id_dedupe_key_key" ON "memory_records"("agent_id", "dedupe_key");

-- CreateIndex
CREATE INDEX "memory_records_tenant_id_agent_id_created_at_idx" ON "memory_records"("tenant_id", "agent_id", "created_at");

-- CreateIndex
CREATE INDEX "memory_records_search_idx" ON "memory_records" USING GIN ("search");
