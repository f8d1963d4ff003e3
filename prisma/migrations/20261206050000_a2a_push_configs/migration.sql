-- A2A push notification configs (docs/adr/0037, issue 32): where the A2A client that asked wants a
-- task's (turn's) updates POSTed, set with tasks/pushNotificationConfig/set (v0.3) or
-- CreateTaskPushNotificationConfig (v1.0). Tenant-scoped; `config_id` is the client's id (or one the
-- gateway made), unique per task. `protocol_version` is the version of the request that set it: the
-- body of a delivery is that version's shape. Read by the completion-webhook hook when the turn ends
-- and by the outbound-webhooks worker at every attempt (a deleted config stops its retries). No
-- foreign key to turns (partitioned by time, docs/adr/0044): deleted with the tenant.
-- CreateTable
CREATE TABLE "a2a_push_configs" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "turn_id" UUID NOT NULL,
    "config_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "token" TEXT,
    "auth_scheme" TEXT,
    "auth_credentials" TEXT,
    "protocol_version" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "a2a_push_configs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "a2a_push_configs_turn_id_config_id_key" ON "a2a_push_configs"("turn_id", "config_id");

-- CreateIndex
CREATE INDEX "a2a_push_configs_tenant_id_idx" ON "a2a_push_configs"("tenant_id");

-- AddForeignKey
ALTER TABLE "a2a_push_configs" ADD CONSTRAINT "a2a_push_configs_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
