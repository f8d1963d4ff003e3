-- Scorers and scores (issue 35; docs/adr/0062). The shared base of evaluation: an agent's scorers are
-- versioned configuration, and every score of a turn (a scorer's, or feedback posted later) is a row here.

-- The agent's scorers: [{name, kind: llm_judge | rule | webhook, samplePercent, ...}] (libs/contracts Scorer).
ALTER TABLE "agents" ADD COLUMN "scorers" JSONB NOT NULL DEFAULT '[]';

-- The versioned configuration now includes the scorers (docs/adr/0061: one definition for every writer).
CREATE OR REPLACE FUNCTION sb_agent_config(a agents) RETURNS jsonb LANGUAGE sql STABLE AS $$
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
    'maxActionsPerHour', a.max_actions_per_hour,
    'scorers', a.scorers)
$$;

-- Existing versions had no scorers: say so explicitly, so a diff against a new version reads [] → [...].
UPDATE agent_versions SET config = config || '{"scorers": []}'::jsonb WHERE NOT config ? 'scorers';

-- One score of one turn. source = scorer: a configured scorer's verdict on the turn's final answer,
-- written by the `scoring` post-turn hook exactly once per (turn, scorer); source = feedback: a rating,
-- label or value posted later through POST /v1/turns/:id/feedback (any number per turn).
CREATE TABLE "turn_scores" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    -- The version the turn ran on (turns.agent_version): the key of every aggregate.
    "agent_version" INTEGER,
    "turn_id" UUID NOT NULL,
    "session_id" UUID,
    -- The turn's trace (from turns.trace_context), so a score links to its trace.
    "trace_id" TEXT,
    "source" TEXT NOT NULL,
    -- The scorer's name; for feedback, 'feedback'.
    "scorer" TEXT NOT NULL,
    -- llm_judge | rule | webhook | feedback
    "kind" TEXT NOT NULL,
    -- scored | skipped (e.g. the evaluation budget was spent: reason says why) | error
    "status" TEXT NOT NULL DEFAULT 'scored',
    "score" DOUBLE PRECISION,
    "passed" BOOLEAN,
    "reason" TEXT,
    "label" TEXT,
    "value" DOUBLE PRECISION,
    -- Who gave feedback (free text the client names: a user id, 'ci', a reviewer), or the scorer's model.
    "given_by" TEXT,
    -- What the scorer's model calls cost (booked to the ledger under hook:scoring:<turn>:<scorer>:<n>).
    "cost_usd" DECIMAL(18,8) NOT NULL DEFAULT 0,
    "details" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "turn_scores_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "turn_scores_source_check" CHECK ("source" IN ('scorer', 'feedback')),
    CONSTRAINT "turn_scores_kind_check" CHECK ("kind" IN ('llm_judge', 'rule', 'webhook', 'feedback')),
    CONSTRAINT "turn_scores_status_check" CHECK ("status" IN ('scored', 'skipped', 'error')),
    CONSTRAINT "turn_scores_score_check" CHECK ("score" IS NULL OR ("score" >= 0 AND "score" <= 1)),
    CONSTRAINT "turn_scores_scored_check" CHECK ("status" <> 'scored' OR "score" IS NOT NULL OR "value" IS NOT NULL OR "label" IS NOT NULL)
);
-- A scorer scores a turn once: the hook's retry and a second delivery find the row.
CREATE UNIQUE INDEX "turn_scores_scorer_once" ON "turn_scores"("turn_id", "scorer") WHERE "source" = 'scorer';
CREATE INDEX "turn_scores_turn_id_idx" ON "turn_scores"("turn_id");
-- The aggregates: per agent, version and day.
CREATE INDEX "turn_scores_agent_version_day_idx" ON "turn_scores"("tenant_id", "agent_id", "agent_version", "created_at");
ALTER TABLE "turn_scores" ADD CONSTRAINT "turn_scores_tenant_id_fkey"
  FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "turn_scores" ADD CONSTRAINT "turn_scores_agent_id_fkey"
  FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;
