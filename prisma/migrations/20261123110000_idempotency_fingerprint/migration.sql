-- AlterTable
ALTER TABLE "messages" ADD COLUMN     "idempotency_fingerprint" TEXT;

