-- The canary (issue 35; docs/adr/0064): a share of an agent's new sessions is pinned to a candidate
-- version, the rest to the baseline; a sweep in the hooks worker compares their online scores
-- (turn_scores) and rolls the candidate back when it is worse by the margin. One row per agent: a new
-- canary replaces the agent's last one (its run_id changes; the audit log keeps the history).
CREATE TABLE "agent_canaries" (
    "agent_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    -- This run of a canary on the agent: the sessions it pinned carry it (sessions.canary_run_id).
    "run_id" UUID NOT NULL,
    "baseline_version" INTEGER NOT NULL,
    "candidate_version" INTEGER NOT NULL,
    -- The share of new sessions pinned to the candidate, by a stable hash of the session id.
    "share_percent" DOUBLE PRECISION NOT NULL,
    -- Rolled back when the candidate's mean score is below the baseline's by at least this (score units).
    "margin" DOUBLE PRECISION NOT NULL DEFAULT 0.1,
    -- Scored turns each side needs before the sweep decides.
    "min_scored" INTEGER NOT NULL DEFAULT 20,
    -- The scorer compared (its name, or 'feedback'); null: every score of the turn (scorers and feedback).
    "scorer" TEXT,
    -- running | promoted | rolled_back | stopped
    "status" TEXT NOT NULL DEFAULT 'running',
    -- The automatic rollback's evidence {baselineMean, candidateMean, n: {baseline, candidate}}, or who
    -- promoted / stopped it and what the sweep last saw.
    "decision" JSONB,
    -- What the sweep last saw while it runs: {baselineMean, candidateMean, n, at}.
    "observed" JSONB,
    "created_by" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "evaluated_at" TIMESTAMPTZ(3),
    "decided_at" TIMESTAMPTZ(3),
    CONSTRAINT "agent_canaries_pkey" PRIMARY KEY ("agent_id"),
    CONSTRAINT "agent_canaries_status_check" CHECK ("status" IN ('running', 'promoted', 'rolled_back', 'stopped')),
    CONSTRAINT "agent_canaries_share_check" CHECK ("share_percent" >= 0 AND "share_percent" <= 100),
    CONSTRAINT "agent_canaries_margin_check" CHECK ("margin" >= 0 AND "margin" <= 1),
    CONSTRAINT "agent_canaries_min_scored_check" CHECK ("min_scored" >= 1),
    CONSTRAINT "agent_canaries_versions_check" CHECK ("baseline_version" <> "candidate_version")
);
-- The sweep: running canaries, the least recently evaluated first.
CREATE INDEX "agent_canaries_running_idx" ON "agent_canaries"("evaluated_at") WHERE "status" = 'running';
ALTER TABLE "agent_canaries" ADD CONSTRAINT "agent_canaries_tenant_id_fkey"
  FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "agent_canaries" ADD CONSTRAINT "agent_canaries_agent_id_fkey"
  FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The canary run that pinned the session (null: none did); a rollback re-pins exactly these.
ALTER TABLE "sessions" ADD COLUMN "canary_run_id" UUID;
CREATE INDEX "sessions_canary_run_id_idx" ON "sessions"("canary_run_id") WHERE "canary_run_id" IS NOT NULL;
