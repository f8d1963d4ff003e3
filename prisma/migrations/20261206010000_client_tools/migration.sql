-- Client-side tools (docs/adr/0047). A request may declare tools the client runs: they are kept with
-- the turn, so whichever worker resumes it offers them again. A call to one makes the turn wait
-- (`awaiting_client_tool`) on an approvals row of kind `client_tool`, which shares the approvals'
-- wait checkpoint, claim, cancel and expiry; the client's answer is stored on it (`output`).
ALTER TABLE "turns" ADD COLUMN "client_tools" JSONB;

ALTER TABLE "approvals" ADD COLUMN "kind" TEXT NOT NULL DEFAULT 'approval';
ALTER TABLE "approvals" ADD COLUMN "output" TEXT;

-- The operator's live turn counts per tenant read waiting turns too (docs/adr/0030).
DROP INDEX "turns_tenant_unfinished_idx";
CREATE INDEX "turns_tenant_unfinished_idx" ON "turns" ("tenant_id", "status")
  WHERE "status" IN ('queued', 'running', 'awaiting_approval', 'awaiting_subagent', 'awaiting_client_tool');
