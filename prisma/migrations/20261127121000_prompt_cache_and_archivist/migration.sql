-- Prompt caching, measured (docs/adr/0032): the tokens each provider call wrote to the provider's
-- prompt cache and what the cache saved, per ledger entry and summed on the turn. Defaults keep the
-- rows written before it valid (no cache was asked for then).
-- AlterTable
ALTER TABLE "ledger_entries" ADD COLUMN     "cache_saved_usd" DECIMAL(18,8) NOT NULL DEFAULT 0,
ADD COLUMN     "cache_write_tokens" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "turns" ADD COLUMN     "cache_saved_usd" DECIMAL(18,8) NOT NULL DEFAULT 0,
ADD COLUMN     "cache_write_tokens" INTEGER NOT NULL DEFAULT 0;

-- The archivist's per-agent settings (docs/adr/0032): over the tenant's `settings.archivist`.
-- AlterTable
ALTER TABLE "agents" ADD COLUMN     "archivist" JSONB NOT NULL DEFAULT '{}';

-- Partial index (migration SQL only): the archivist's deferred turns, which the hooks reconcile
-- reads to find sessions whose distillation job was lost. It holds only turns waiting for one.
CREATE INDEX "hook_runs_deferred_idx" ON "hook_runs" ("created_at") WHERE "status" = 'deferred';
