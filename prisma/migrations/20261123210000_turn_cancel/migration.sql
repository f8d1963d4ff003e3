-- AlterTable
ALTER TABLE "turns" ADD COLUMN     "cancel_reason" TEXT,
ADD COLUMN     "cancel_requested_at" TIMESTAMPTZ(3);
