-- The closure decision of an ended turn (seed 002 "Closure Decision", docs/adr/0031).
-- AlterTable
ALTER TABLE "turns" ADD COLUMN     "closure" JSONB;
