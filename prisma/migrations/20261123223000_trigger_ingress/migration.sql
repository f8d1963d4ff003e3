-- AlterTable
ALTER TABLE "triggers" ADD COLUMN     "delivery_mode" TEXT NOT NULL DEFAULT 'enqueue_message',
ADD COLUMN     "previous_secret_expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "previous_signing_secret" TEXT;

-- AlterTable
ALTER TABLE "trigger_deliveries" ADD COLUMN     "verified" BOOLEAN NOT NULL DEFAULT false;

