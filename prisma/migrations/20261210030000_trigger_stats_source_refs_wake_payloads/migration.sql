-- Triggers and wake hints (issue 38, docs/adr/0060).
-- A trigger's delivery tracking (seed 002 "External Trigger Ingress" step 4): how many deliveries it
-- stored and when the last one arrived, updated by the statement that stores a delivery.
ALTER TABLE "triggers" ADD COLUMN "delivery_count" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "triggers" ADD COLUMN "last_delivery_at" TIMESTAMPTZ(3);
UPDATE "triggers" t SET "delivery_count" = d.n, "last_delivery_at" = d.last
  FROM (SELECT "trigger_id", count(*)::int AS n, max("created_at") AS last
        FROM "trigger_deliveries" GROUP BY "trigger_id") d
  WHERE d."trigger_id" = t."id";

-- The envelope's stable source references (seed 002 `sourceRefs`): trigger, delivery, wake hint ids.
ALTER TABLE "messages" ADD COLUMN "source_refs" JSONB NOT NULL DEFAULT '{}';

-- The pending wake hints' own records (seed 002 "Wake Hints"): trigger, delivery, source, content type,
-- payload body when present, correlation and causation ids; the first WAKE_HINT_MAX_LISTED kept.
ALTER TABLE "wake_hints" ADD COLUMN "hints" JSONB NOT NULL DEFAULT '[]';
