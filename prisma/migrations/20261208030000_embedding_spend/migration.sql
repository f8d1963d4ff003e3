-- Embedding spend in the cost ledger (issue 33, docs/adr/0050): a `kind` tells an embeddings call
-- from a chat call, and background work outside any turn (the memory-embed job) books with no turn
-- and no session. Such an entry's turn_at (the partition key, ADR 0044) is the creation time of the
-- job run's id, so a retried run computes the same (key, turn_at) and books once.
ALTER TABLE "ledger_entries" ADD COLUMN "kind" TEXT NOT NULL DEFAULT 'chat';
ALTER TABLE "ledger_entries" ALTER COLUMN "turn_id" DROP NOT NULL;
ALTER TABLE "ledger_entries" ALTER COLUMN "session_id" DROP NOT NULL;
