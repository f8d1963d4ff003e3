-- Scoped keys (docs/adr/0066): a role, an optional list of agents, an optional expiry.
-- Existing keys become `admin` keys limited to no agent and never expiring: their behaviour is unchanged.
ALTER TABLE "api_keys" ADD COLUMN "role" TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE "api_keys" ADD COLUMN "agent_ids" UUID[] NOT NULL DEFAULT ARRAY[]::UUID[];
ALTER TABLE "api_keys" ADD COLUMN "expires_at" TIMESTAMPTZ(3);
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_role_check"
  CHECK ("role" IN ('admin', 'developer', 'approver', 'reader', 'ingest'));
