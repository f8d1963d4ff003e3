-- A tenant's MCP servers (issue 11, docs/adr/0023).

-- CreateTable
CREATE TABLE "mcp_servers" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "auth_header_name" TEXT,
    "auth_header_value" TEXT,
    "timeout_ms" INTEGER NOT NULL DEFAULT 30000,
    "idempotency_keys" BOOLEAN NOT NULL DEFAULT false,
    "tools" JSONB NOT NULL DEFAULT '[]',
    "tools_fetched_at" TIMESTAMPTZ(3),
    "status" TEXT NOT NULL DEFAULT 'unreachable',
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "mcp_servers_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "mcp_servers_tenant_id_idx" ON "mcp_servers"("tenant_id");

-- One live server per (tenant, name): a deleted server's name can be taken again.
CREATE UNIQUE INDEX "mcp_servers_tenant_id_name_live_key" ON "mcp_servers"("tenant_id", "name") WHERE "deleted_at" IS NULL;
