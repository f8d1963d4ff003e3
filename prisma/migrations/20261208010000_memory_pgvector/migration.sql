-- Vector memory on pgvector where the database has it (issue 33, docs/adr/0050 "pgvector").
--
-- Only where pgvector is available (`pg_available_extensions`): the extension, a nullable
-- `embedding_v vector` column (no fixed dimension: each (model, dimensions) set has its own partial
-- HNSW index on `embedding_v::vector(N)`), the existing vectors copied into it, and the index of
-- every set that exists already. The index name is the one libs/memory/src/pgvector.ts derives
-- (`memory_embeddings_hnsw_` + the first 24 hex digits of sha256("<model>\n<dimensions>")); the
-- embed job creates the index of a set it starts. On a Postgres without pgvector (Debian's PG 15
-- here) this does nothing, and vector memory keeps its exact scan of `embedding real[]`.
--
-- The column is not in prisma/schema.prisma (a `vector` type Prisma would create unconditionally);
-- only raw SQL reads and writes it.
DO $$
DECLARE
  statements TEXT[];
  statement TEXT;
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    CREATE EXTENSION IF NOT EXISTS vector;
    ALTER TABLE "memory_embeddings" ADD COLUMN IF NOT EXISTS "embedding_v" vector;
    EXECUTE 'UPDATE "memory_embeddings" SET "embedding_v" = "embedding"::vector WHERE "embedding_v" IS NULL';
    -- Read the sets first: an index cannot be created while a loop's query still reads the table.
    SELECT coalesce(array_agg(format(
        'CREATE INDEX IF NOT EXISTS %I ON "memory_embeddings" '
          'USING hnsw (("embedding_v"::vector(%s)) vector_cosine_ops) WHERE model = %L AND dimensions = %s',
        'memory_embeddings_hnsw_' || left(encode(sha256(convert_to(model || E'\n' || dimensions, 'UTF8')), 'hex'), 24),
        dimensions, model, dimensions)), '{}')
      INTO statements
      FROM (SELECT DISTINCT model, dimensions FROM "memory_embeddings") s
      -- The sets the code indexes (libs/memory/src/pgvector.ts, hnswEligible): ≤ 2,000 dimensions,
      -- a model name of printable ASCII without a backslash.
      WHERE dimensions <= 2000 AND model ~ '^[\x20-\x5b\x5d-\x7e]{1,200}$';
    FOREACH statement IN ARRAY statements LOOP
      EXECUTE statement;
    END LOOP;
  END IF;
END
$$;
