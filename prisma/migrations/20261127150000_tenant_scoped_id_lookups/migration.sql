-- Issue 22: the hot statements look a turn up as `id = $1 AND tenant_id = $2`. For a tenant newer
-- than the table's last ANALYZE the planner estimates one row for the tenant and picks the plain
-- tenant_id index, reading every turn of the tenant to find one (1.3 ms at 1,050 turns, several
-- times per turn). With the turn's id in the tenant's index both predicates are index conditions:
-- one entry read whichever index the planner picks, and the tenant's turns listed as before.
DROP INDEX "turns_tenant_id_idx";
CREATE INDEX "turns_tenant_id_id_idx" ON "turns"("tenant_id", "id");

-- The same lookup of a session (admission, the journal) had only (tenant_id, created_at) to pick.
CREATE INDEX "sessions_tenant_id_id_idx" ON "sessions"("tenant_id", "id");
