-- The fair choice reads only what can be chosen (issue 37, docs/adr/0081). Before, a band's probe
-- walked the tenant's unfinished turns oldest first, its running ones included, and the
-- interrupted-turn probe walked every running turn of the tenant: each choice read O(running)
-- rows, 20 ms at 3,000 running turns. Now a band's probe reads queued turns only, and an
-- interrupted turn is found from its session's expired lease.

-- A tenant's oldest queued turn in each priority band (one probe per band).
DROP INDEX IF EXISTS "turns_unfinished_band_idx";
CREATE INDEX "turns_queued_band_idx" ON "turns" ("tenant_id", "priority", "created_at")
  WHERE "status" = 'queued';

-- A tenant's slots in use (its sessions under a lease), and its expired leases in one range.
DROP INDEX IF EXISTS "sessions_leased_tenant_idx";
CREATE INDEX "sessions_leased_tenant_idx" ON "sessions" ("tenant_id", "lease_expires_at")
  WHERE "lease_token" IS NOT NULL;
