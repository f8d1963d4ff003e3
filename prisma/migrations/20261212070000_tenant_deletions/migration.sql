-- Tenant deletions (docs/adr/0068): one row per DELETE /v1/admin/tenants/:id, kept after the tenant
-- is gone as the operator's record of it. The deleted tenant's id is `deleted_tenant_id`, not
-- `tenant_id`: the deleter finds every table holding a tenant's rows by its `tenant_id` column, and
-- this row must outlive them.
CREATE TABLE "tenant_deletions" (
    "id" UUID NOT NULL,
    "deleted_tenant_id" UUID NOT NULL,
    "tenant_name" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "stage" TEXT NOT NULL DEFAULT 'keys',
    "counts" JSONB NOT NULL DEFAULT '{}',
    "redis_keys" INTEGER NOT NULL DEFAULT 0,
    "jobs" INTEGER NOT NULL DEFAULT 0,
    "originals" INTEGER NOT NULL DEFAULT 0,
    "key_destroyed" BOOLEAN NOT NULL DEFAULT false,
    "error" TEXT,
    "requested_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "tenant_deletions_pkey" PRIMARY KEY ("id")
);

-- At most one deletion of a tenant that has not ended: a second request finds it.
CREATE UNIQUE INDEX "tenant_deletions_open_idx" ON "tenant_deletions" ("deleted_tenant_id")
    WHERE "status" IN ('queued', 'running');

-- Transcript retention (docs/adr/0068): when the maintenance job purged a session's content.
ALTER TABLE "sessions" ADD COLUMN "content_purged_at" TIMESTAMPTZ(3);
