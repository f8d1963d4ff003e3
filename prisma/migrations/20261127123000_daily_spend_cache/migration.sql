-- The daily spend roll-up gains the prompt cache's figures (docs/adr/0032), as GET /v1/usage has them:
-- tokens written to the provider's cache, and what the cache saved in USD (may be negative).
-- AlterTable
ALTER TABLE "tenant_spend_daily" ADD COLUMN     "cache_saved_usd" DECIMAL(20,8) NOT NULL DEFAULT 0,
ADD COLUMN     "cache_write_tokens" BIGINT NOT NULL DEFAULT 0;

-- Backfill from the ledger: the entries the roll-up already counts, the archivist's (key hook:...) and
-- the turn's own calls of turns the cost-log hook rolled up, per UTC day of each entry.
UPDATE "tenant_spend_daily" d
SET "cache_write_tokens" = s.cache_write_tokens, "cache_saved_usd" = s.cache_saved_usd
FROM (
  SELECT l.tenant_id, (l.created_at AT TIME ZONE 'UTC')::date AS day,
    sum(l.cache_write_tokens) AS cache_write_tokens, sum(l.cache_saved_usd) AS cache_saved_usd
  FROM "ledger_entries" l
  LEFT JOIN "turns" t ON t.id = l.turn_id
  WHERE l.key LIKE 'hook:%' OR (t.spend_rolled_up_at IS NOT NULL)
  GROUP BY 1, 2
) s
WHERE d.tenant_id = s.tenant_id AND d.day = s.day;
