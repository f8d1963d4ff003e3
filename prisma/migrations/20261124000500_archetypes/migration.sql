-- Built-in archetypes materialised per tenant (docs/adr/0025-archetypes-and-tiers.md): at most one
-- live built-in row per (tenant, name), so concurrent resolutions of a sub-agent name make one row
-- (INSERT ... ON CONFLICT (tenant_id, name) WHERE built_in AND deleted_at IS NULL DO NOTHING).
CREATE UNIQUE INDEX "agents_tenant_id_name_built_in_key" ON "agents" ("tenant_id", "name")
  WHERE "built_in" AND "deleted_at" IS NULL;

-- Sub-agent names resolve by (tenant, name) at spawn time and when definitions are saved.
CREATE INDEX "agents_tenant_id_name_idx" ON "agents" ("tenant_id", "name") WHERE "deleted_at" IS NULL;
