-- Memory blocks (issue 33, docs/adr/0051): named, size-bounded pieces of an agent's core memory,
-- rendered into every turn's system prompt. Every text a block ever held is a version.
CREATE TABLE "memory_blocks" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "content" TEXT NOT NULL,
    "limit_chars" INTEGER NOT NULL,
    "read_only" BOOLEAN NOT NULL DEFAULT false,
    "version" INTEGER NOT NULL DEFAULT 1,
    "written_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "memory_blocks_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "memory_blocks_content_bound" CHECK (char_length("content") <= "limit_chars")
);

CREATE UNIQUE INDEX "memory_blocks_agent_id_name_key" ON "memory_blocks"("agent_id", "name");
CREATE INDEX "memory_blocks_tenant_id_agent_id_idx" ON "memory_blocks"("tenant_id", "agent_id");

CREATE TABLE "memory_block_versions" (
    "block_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "content" TEXT NOT NULL,
    "written_by" TEXT NOT NULL,
    "turn_id" UUID,
    "call_key" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "memory_block_versions_pkey" PRIMARY KEY ("block_id", "version")
);

CREATE UNIQUE INDEX "memory_block_versions_block_id_call_key_key" ON "memory_block_versions"("block_id", "call_key");

ALTER TABLE "memory_block_versions" ADD CONSTRAINT "memory_block_versions_block_id_fkey" FOREIGN KEY ("block_id") REFERENCES "memory_blocks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
