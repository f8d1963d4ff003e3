-- Post-turn hooks reconcile (docs/adr/0027). An ended turn is unsettled until the sweep finds a
-- hook_runs row for every post-turn hook. The partial index holds only ended, unsettled turns, so
-- the read of a sweep stays small however long the history is. Turns that ended before this migration
-- are settled at once: their hooks were enqueued when they ended, and the completion-webhook hook
-- recorded no hook_runs row then (reconciling them would send their webhooks again).
-- AlterTable
ALTER TABLE "turns" ADD COLUMN     "hooks_settled_at" TIMESTAMPTZ(3);

UPDATE "turns" SET "hooks_settled_at" = coalesce("completed_at", now())
WHERE "status" IN ('completed', 'failed', 'cancelled');

CREATE INDEX "turns_hooks_unsettled_idx" ON "turns" ("completed_at")
  WHERE "hooks_settled_at" IS NULL AND "status" IN ('completed', 'failed', 'cancelled');
