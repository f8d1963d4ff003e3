-- Per-tenant data keys (docs/adr/0067): each version wrapped by a key-encryption key (KEK) of the
-- deployment's KeyProvider; the unwrapped key is never stored. Deleting a tenant deletes these rows
-- first (crypto-shredding), so no FK cascade is relied on.
CREATE TABLE "tenant_data_keys" (
    "tenant_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "provider" TEXT NOT NULL,
    "kek_id" TEXT NOT NULL,
    "wrapped_key" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'active',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tenant_data_keys_pkey" PRIMARY KEY ("tenant_id","version"),
    CONSTRAINT "tenant_data_keys_state_check" CHECK ("state" IN ('active', 'retired', 'destroyed'))
);

-- At most one active version per tenant.
CREATE UNIQUE INDEX "tenant_data_keys_one_active" ON "tenant_data_keys" ("tenant_id") WHERE "state" = 'active';
