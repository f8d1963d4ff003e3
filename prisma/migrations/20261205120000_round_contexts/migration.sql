-- "What the model saw" (docs/adr/0045): each model round's exact context, content-addressed. A part
-- (the system prompt, the tool list, one message) is stored once per tenant under a 128-bit hash of
-- its JSON (32 hex characters); a round row lists its parts' hashes in order with each one's source,
-- as parallel arrays {h: [...], s: "<one letter per part>"}, and a round extending an earlier round
-- of its turn stores only what it adds ({p: <that round>, k: <parts kept>, h, s}). Both are written
-- by the round's checkpoint statement (no statement of their own); ROUND_CONTEXTS=off writes
-- neither. Not partitioned (docs/adr/0044): a round row is small and deleted with its turn; the
-- parts are shared between rounds and turns of a tenant.
-- CreateTable
CREATE TABLE "context_parts" (
    "tenant_id" UUID NOT NULL,
    "hash" TEXT NOT NULL,
    "content" JSONB NOT NULL,
    "tokens" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "context_parts_pkey" PRIMARY KEY ("tenant_id","hash")
);

-- CreateTable
CREATE TABLE "turn_round_contexts" (
    "tenant_id" UUID NOT NULL,
    "turn_id" UUID NOT NULL,
    "round_index" INTEGER NOT NULL,
    "parts" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "turn_round_contexts_pkey" PRIMARY KEY ("turn_id","round_index")
);

-- CreateIndex
CREATE INDEX "turn_round_contexts_tenant_id_idx" ON "turn_round_contexts"("tenant_id");

-- AddForeignKey
ALTER TABLE "context_parts" ADD CONSTRAINT "context_parts_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "turn_round_contexts" ADD CONSTRAINT "turn_round_contexts_turn_id_fkey" FOREIGN KEY ("turn_id") REFERENCES "turns"("id") ON DELETE CASCADE ON UPDATE CASCADE;
