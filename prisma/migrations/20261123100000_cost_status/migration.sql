-- AlterTable
ALTER TABLE "turns" ADD COLUMN     "cost_status" TEXT;
