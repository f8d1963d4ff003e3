-- Versioned agent configuration (docs/adr/0061-agent-versions.md).

-- The agent's current version: bumped by every change of its versioned configuration.
ALTER TABLE "agents" ADD COLUMN "version" INTEGER NOT NULL DEFAULT 1;

-- The version a session is pinned to (null: it follows the agent's latest) and the version a turn ran on.
ALTER TABLE "sessions" ADD COLUMN "agent_version" INTEGER;
ALTER TABLE "turns" ADD COLUMN "agent_version" INTEGER;

-- Immutable numbered snapshots of an agent's configuration.
CREATE TABLE "agent_versions" (
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "config" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" TEXT,
    "note" TEXT,
    CONSTRAINT "agent_versions_pkey" PRIMARY KEY ("agent_id", "version"),
    CONSTRAINT "agent_versions_version_check" CHECK ("version" >= 1)
);
CREATE INDEX "agent_versions_tenant_id_agent_id_idx" ON "agent_versions"("tenant_id", "agent_id");
ALTER TABLE "agent_versions" ADD CONSTRAINT "agent_versions_agent_id_fkey"
  FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The versioned configuration of an agent row: every field PATCH /v1/agents/:id can change that shapes
-- a turn (name, tier and archetype are the agent's identity and place in the delegation graph: not versioned).
-- One definition, used by the backfill, the insert trigger and every change (AgentsRepository).
CREATE FUNCTION sb_agent_config(a agents) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'instructions', a.instructions,
    'model', a.model,
    'fallbackModels', to_jsonb(a.fallback_models),
    'tools', to_jsonb(a.tools),
    'allowedSubagents', to_jsonb(a.allowed_subagents),
    'approvalRequired', to_jsonb(coalesce(a.approval_required, '{}')),
    'budgets', a.budgets,
    'toolResultCompression', a.tool_result_compression,
    'archivist', a.archivist,
    'toolSelection', a.tool_selection,
    'embedder', a.embedder,
    'memory', a.memory,
    'maxActionsPerHour', a.max_actions_per_hour)
$$;

-- Every agent, however it is inserted (the API, a materialised archetype, triage), starts at version 1.
CREATE FUNCTION sb_agent_first_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO agent_versions (tenant_id, agent_id, version, config, note)
  VALUES (NEW.tenant_id, NEW.id, NEW.version, sb_agent_config(NEW), 'created')
  ON CONFLICT DO NOTHING;
  RETURN NEW;
END
$$;
CREATE TRIGGER agents_first_version AFTER INSERT ON "agents"
  FOR EACH ROW EXECUTE FUNCTION sb_agent_first_version();

-- Backfill: version 1 of every existing agent is its configuration now.
INSERT INTO agent_versions (tenant_id, agent_id, version, config, created_at, note)
SELECT a.tenant_id, a.id, 1, sb_agent_config(a), a.created_at, 'backfilled'
FROM agents a
ON CONFLICT DO NOTHING;
