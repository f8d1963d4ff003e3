-- TokenJuice (docs/adr/0033): the tool-result compression setting of an agent (auto | full | light | off),
-- and the originals of lossily compacted tool results, per tenant, kept until expires_at. The
-- maintenance `tokenjuice` sweep deletes expired rows off the expires_at index. Postgres stores the
-- content TOASTed (compressed out of line), so a large original costs its compressed size.
-- AlterTable
ALTER TABLE "agents" ADD COLUMN     "tool_result_compression" TEXT NOT NULL DEFAULT 'auto';

-- CreateTable
CREATE TABLE "tool_result_originals" (
    "tenant_id" UUID NOT NULL,
    "id" TEXT NOT NULL,
    "session_id" UUID,
    "turn_id" UUID,
    "call_id" TEXT,
    "tool" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "bytes" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "tool_result_originals_pkey" PRIMARY KEY ("tenant_id","id")
);

-- CreateIndex
CREATE INDEX "tool_result_originals_expires_at_idx" ON "tool_result_originals"("expires_at");

