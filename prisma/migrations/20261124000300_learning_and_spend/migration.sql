-- CreateTable
CREATE TABLE "agent_tool_stats" (
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "tool" TEXT NOT NULL,
    "calls" INTEGER NOT NULL DEFAULT 0,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "failures_by_kind" JSONB NOT NULL DEFAULT '{}',
    "total_latency_ms" BIGINT NOT NULL DEFAULT 0,
    "max_latency_ms" INTEGER NOT NULL DEFAULT 0,
    "last_used_at" TIMESTAMPTZ(3),
    "last_failed_at" TIMESTAMPTZ(3),
    "last_failure_kind" TEXT,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_tool_stats_pkey" PRIMARY KEY ("agent_id","tool")
);

-- CreateTable
CREATE TABLE "tenant_spend_daily" (
    "tenant_id" UUID NOT NULL,
    "day" DATE NOT NULL,
    "cost_usd" DECIMAL(20,8) NOT NULL DEFAULT 0,
    "input_tokens" BIGINT NOT NULL DEFAULT 0,
    "output_tokens" BIGINT NOT NULL DEFAULT 0,
    "cached_tokens" BIGINT NOT NULL DEFAULT 0,
    "provider_calls" INTEGER NOT NULL DEFAULT 0,
    "turns" INTEGER NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tenant_spend_daily_pkey" PRIMARY KEY ("tenant_id","day")
);

-- CreateIndex
CREATE INDEX "agent_tool_stats_tenant_id_idx" ON "agent_tool_stats"("tenant_id");
