-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "compaction" JSONB;
