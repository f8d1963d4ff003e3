-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "summarizer_failures" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "turns" ADD COLUMN     "decision" JSONB,
ADD COLUMN     "finalisation_errors" JSONB NOT NULL DEFAULT '[]';

