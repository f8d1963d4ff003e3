-- The context pack's preferences (docs/adr/0052): an agent's records tagged `preference`, newest
-- first, read before every turn. A partial index keeps that read at the few tagged rows instead of a
-- scan of all the agent's records; Prisma's schema cannot state a partial index, so it lives here
-- only (as hook_runs_deferred_idx does).
CREATE INDEX "memory_records_preference_idx" ON "memory_records" ("tenant_id", "agent_id", "created_at")
  WHERE "tags" @> '{preference}'::text[];
