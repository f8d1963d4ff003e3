-- DropIndex
DROP INDEX "approvals_tenant_id_status_idx";

-- DropIndex
DROP INDEX "approvals_tool_call_id_key";

-- AlterTable
ALTER TABLE "agents" ADD COLUMN     "approval_required" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- AlterTable
ALTER TABLE "approvals" DROP COLUMN "tool_call_id",
ADD COLUMN     "arguments" JSONB NOT NULL,
ADD COLUMN     "call_id" TEXT NOT NULL,
ADD COLUMN     "decided_by" TEXT,
ADD COLUMN     "expires_at" TIMESTAMPTZ(3) NOT NULL,
ADD COLUMN     "policy" TEXT NOT NULL,
ADD COLUMN     "session_id" UUID NOT NULL,
ADD COLUMN     "side_effect" TEXT NOT NULL,
ADD COLUMN     "tool_name" TEXT NOT NULL;

-- CreateIndex
CREATE INDEX "approvals_tenant_id_status_id_idx" ON "approvals"("tenant_id", "status", "id");

-- CreateIndex
CREATE INDEX "approvals_status_expires_at_idx" ON "approvals"("status", "expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "approvals_turn_id_call_id_key" ON "approvals"("turn_id", "call_id");

-- AddForeignKey
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_turn_id_fkey" FOREIGN KEY ("turn_id") REFERENCES "turns"("id") ON DELETE CASCADE ON UPDATE CASCADE;

