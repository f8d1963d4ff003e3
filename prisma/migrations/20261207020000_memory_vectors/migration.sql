-- Vector memory and hybrid recall (issue 33, docs/adr/0050).
--
-- `agents.memory`: the agent's memory settings ({embedder?: "<provider>/<model>", recall?: fts |
-- vector | hybrid}); `agents.memory_vectors_model`: the embedder whose vectors recall compares
-- against (null: none complete yet). It changes only when the re-embedding job has a vector of the
-- new model for every record, so recall never compares vectors of two models or dimensions.
ALTER TABLE "agents" ADD COLUMN "memory" JSONB NOT NULL DEFAULT '{}';
ALTER TABLE "agents" ADD COLUMN "memory_vectors_model" TEXT;

-- Tags an operator or the agent sets on a record, filtered on by memory_search and the API.
ALTER TABLE "memory_records" ADD COLUMN "tags" TEXT[] NOT NULL DEFAULT '{}';

-- One vector per (record, model): a model change fills a second set beside the first. Deleted with
-- the record. `dimensions` is checked against the array's length, so a set never mixes lengths.
CREATE TABLE "memory_embeddings" (
    "record_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "dimensions" INTEGER NOT NULL,
    "embedding" REAL[] NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "memory_embeddings_pkey" PRIMARY KEY ("record_id", "model"),
    CONSTRAINT "memory_embeddings_dimensions_check"
      CHECK ("dimensions" BETWEEN 1 AND 4096 AND cardinality("embedding") = "dimensions"),
    CONSTRAINT "memory_embeddings_record_id_fkey" FOREIGN KEY ("record_id")
      REFERENCES "memory_records"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- The exact scan reads one agent's vectors of one model.
CREATE INDEX "memory_embeddings_tenant_id_agent_id_model_idx"
  ON "memory_embeddings"("tenant_id", "agent_id", "model");
