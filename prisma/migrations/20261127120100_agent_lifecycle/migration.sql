-- The agent lifecycle (seed 002 "Agent State", "Wake / Sleep Lifecycle", docs/adr/0031): the operator
-- posture (active, paused, stopped) with why and since when, and the sleep the agent asked for.
-- AlterTable
ALTER TABLE "agents" ADD COLUMN     "asleep_at" TIMESTAMPTZ(3),
ADD COLUMN     "lifecycle" TEXT NOT NULL DEFAULT 'active',
ADD COLUMN     "lifecycle_at" TIMESTAMPTZ(3),
ADD COLUMN     "lifecycle_reason" TEXT,
ADD COLUMN     "sleep_reason" TEXT,
ADD COLUMN     "sleeping_until" TIMESTAMPTZ(3);
