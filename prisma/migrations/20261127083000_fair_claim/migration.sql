-- Fair share and concurrency caps at the claim (docs/adr/0029). Partial indexes only: each holds the
-- few rows the claim's choice reads (unfinished turns, waiting turns, leased sessions), not history.

-- The tenants with unfinished turns, and each tenant's oldest (a skip scan, one probe per tenant).
CREATE INDEX "turns_unfinished_tenant_idx" ON "turns" ("tenant_id", "created_at")
  WHERE "status" IN ('queued', 'running');

-- A tenant's oldest unfinished turn in each priority band (one probe per band).
CREATE INDEX "turns_unfinished_band_idx" ON "turns" ("tenant_id", "priority", "created_at")
  WHERE "status" IN ('queued', 'running');

-- Sessions held by a waiting turn (an approval, a sub-agent): nothing of theirs is runnable.
CREATE INDEX "turns_waiting_session_idx" ON "turns" ("session_id")
  WHERE "status" IN ('awaiting_approval', 'awaiting_subagent');

-- A tenant's slots in use: its sessions under a lease.
CREATE INDEX "sessions_leased_tenant_idx" ON "sessions" ("tenant_id")
  WHERE "lease_token" IS NOT NULL;
