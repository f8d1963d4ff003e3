-- Typed cancel reasons (docs/adr/0055). `turns.cancel_reason` was free text; it becomes one of the
-- CancelReason values (libs/contracts/src/cancel-reasons.ts), held by a CHECK, and the free text moves
-- to `cancel_note`.
ALTER TABLE "turns" ADD COLUMN "cancel_note" TEXT;

-- Every text the code wrote, mapped; anything else was a client's own `reason` on
-- POST /v1/turns/:id/cancel (kept as the note). Texts the reason says in full leave no note.
UPDATE "turns" SET
  "cancel_note" = CASE
    WHEN "cancel_reason" IN (
      'interrupted by a newer message (multitask: interrupt)',
      'the LangGraph client disconnected'
    ) THEN NULL
    ELSE left("cancel_reason", 500)
  END,
  "cancel_reason" = CASE
    WHEN "cancel_reason" = 'interrupted by a newer message (multitask: interrupt)' THEN 'superseded'
    WHEN "cancel_reason" = 'the LangGraph client disconnected' THEN 'client_disconnected'
    ELSE 'api_cancel'
  END
WHERE "cancel_reason" IS NOT NULL;

-- A cancel without a reason came from POST /v1/turns/:id/cancel without a body (every other path
-- gave one; a paused tenant's turn ended `completed`).
UPDATE "turns" SET "cancel_reason" = 'api_cancel'
WHERE "cancel_reason" IS NULL AND ("status" = 'cancelled' OR "cancel_requested_at" IS NOT NULL);

-- A sub-agent's child turn cancelled with its parent carries the parent's reason (the note keeps
-- "parent turn <id> was cancelled"). Trees are at most 3 deep (docs/adr/0025): three passes reach
-- every level.
UPDATE "turns" c SET "cancel_reason" = p."cancel_reason"
FROM "turns" p
WHERE c."cancel_note" ~ '^parent turn [0-9a-f-]{36} was cancelled$'
  AND p."id" = substring(c."cancel_note" from 13 for 36)::uuid
  AND p."cancel_reason" IS NOT NULL AND p."cancel_reason" <> c."cancel_reason";
UPDATE "turns" c SET "cancel_reason" = p."cancel_reason"
FROM "turns" p
WHERE c."cancel_note" ~ '^parent turn [0-9a-f-]{36} was cancelled$'
  AND p."id" = substring(c."cancel_note" from 13 for 36)::uuid
  AND p."cancel_reason" IS NOT NULL AND p."cancel_reason" <> c."cancel_reason";
UPDATE "turns" c SET "cancel_reason" = p."cancel_reason"
FROM "turns" p
WHERE c."cancel_note" ~ '^parent turn [0-9a-f-]{36} was cancelled$'
  AND p."id" = substring(c."cancel_note" from 13 for 36)::uuid
  AND p."cancel_reason" IS NOT NULL AND p."cancel_reason" <> c."cancel_reason";

ALTER TABLE "turns" ADD CONSTRAINT "turns_cancel_reason_check" CHECK (
  "cancel_reason" IS NULL OR "cancel_reason" IN (
    'api_cancel', 'client_disconnected', 'superseded', 'tenant_paused',
    'agent_stopped', 'deadline', 'budget', 'operator'
  )
);
ALTER TABLE "turns" ADD CONSTRAINT "turns_cancel_note_length_check" CHECK (
  "cancel_note" IS NULL OR length("cancel_note") <= 500
);
