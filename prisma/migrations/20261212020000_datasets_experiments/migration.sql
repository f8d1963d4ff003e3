-- Datasets and experiments (issue 35; docs/adr/0063). A dataset is a tenant's named list of inputs with
-- what a right answer looks like; an experiment runs every item on each of an agent's versions, one
-- pinned session per (item, version), and reads the results from turn_scores.

CREATE TABLE "datasets" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "datasets_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "datasets_tenant_id_name_key" ON "datasets"("tenant_id", "name");
ALTER TABLE "datasets" ADD CONSTRAINT "datasets_tenant_id_fkey"
  FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- One input of a dataset. `expected` becomes the `dataset:expected` rule of the experiment turn that runs
-- it, `rubric` its `dataset:rubric` judge (libs/hooks/src/scoring-extra.ts). Bounded (input, expected,
-- rubric and metadata together ≤ 32 KiB) by the API.
CREATE TABLE "dataset_items" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "dataset_id" UUID NOT NULL,
    "input" TEXT NOT NULL,
    "expected" TEXT,
    -- exact | contains | json: how `expected` is compared with the answer.
    "match" TEXT NOT NULL DEFAULT 'exact',
    "rubric" TEXT,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    -- The turn the item was taken from (POST /v1/datasets/:id/items/from-turn); no foreign key: the
    -- item outlives the turn's partition.
    "source_turn_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "dataset_items_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "dataset_items_match_check" CHECK ("match" IN ('exact', 'contains', 'json'))
);
CREATE INDEX "dataset_items_dataset_id_id_idx" ON "dataset_items"("dataset_id", "id");
ALTER TABLE "dataset_items" ADD CONSTRAINT "dataset_items_dataset_id_fkey"
  FOREIGN KEY ("dataset_id") REFERENCES "datasets"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- An experiment: the dataset's items run on each listed version of the agent. `status` is running until
-- every run's turn ended and its hooks settled (computed on read; completed_at stored when first seen).
CREATE TABLE "experiments" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "dataset_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "versions" INTEGER[] NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'running',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),
    CONSTRAINT "experiments_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "experiments_status_check" CHECK ("status" IN ('running', 'completed', 'cancelled'))
);
CREATE INDEX "experiments_tenant_id_id_idx" ON "experiments"("tenant_id", "id");
ALTER TABLE "experiments" ADD CONSTRAINT "experiments_tenant_id_fkey"
  FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "experiments" ADD CONSTRAINT "experiments_dataset_id_fkey"
  FOREIGN KEY ("dataset_id") REFERENCES "datasets"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "experiments" ADD CONSTRAINT "experiments_agent_id_fkey"
  FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- One (item, version) of an experiment: its pinned session and, once admitted, its turn.
-- status: pending (session made, not admitted yet) | admitted | failed (the admission was refused).
CREATE TABLE "experiment_runs" (
    "id" UUID NOT NULL,
    "experiment_id" UUID NOT NULL,
    "dataset_item_id" UUID NOT NULL,
    "agent_version" INTEGER NOT NULL,
    "session_id" UUID NOT NULL,
    "turn_id" UUID,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "error" TEXT,
    CONSTRAINT "experiment_runs_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "experiment_runs_status_check" CHECK ("status" IN ('pending', 'admitted', 'failed'))
);
CREATE UNIQUE INDEX "experiment_runs_item_version_key"
  ON "experiment_runs"("experiment_id", "dataset_item_id", "agent_version");
ALTER TABLE "experiment_runs" ADD CONSTRAINT "experiment_runs_experiment_id_fkey"
  FOREIGN KEY ("experiment_id") REFERENCES "experiments"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "experiment_runs" ADD CONSTRAINT "experiment_runs_dataset_item_id_fkey"
  FOREIGN KEY ("dataset_item_id") REFERENCES "dataset_items"("id") ON DELETE CASCADE ON UPDATE CASCADE;
