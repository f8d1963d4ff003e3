-- Tenant daily spend cap (docs/adr/0026 addendum). A turn's spend is in tenant_spend_daily once the
-- cost-log hook rolled it up (in the statement that writes its hook_runs row), and until then the cap
-- counts the turn's cost_usd. The partial index holds only turns not rolled up yet (in flight, or
-- ended and waiting for their hook), so the cap's read stays small however long the history is.
ALTER TABLE "turns" ADD COLUMN "spend_rolled_up_at" TIMESTAMPTZ(3);

UPDATE "turns" t SET "spend_rolled_up_at" = h."completed_at"
FROM "hook_runs" h WHERE h."turn_id" = t."id" AND h."hook" = 'cost-log';

CREATE INDEX "turns_spend_not_rolled_up_idx" ON "turns" ("tenant_id", "completed_at")
  WHERE "spend_rolled_up_at" IS NULL;
