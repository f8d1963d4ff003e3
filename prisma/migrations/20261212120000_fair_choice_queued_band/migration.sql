-- A band's probe in the fair choice reads queued turns only (issue 37, docs/adr/0081). Before, it
-- walked the band's unfinished turns oldest first, its running ones (the oldest, at a burst)
-- included: each choice read O(running turns) rows.

-- A tenant's oldest queued turn in each priority band (one probe per band).
DROP INDEX IF EXISTS "turns_unfinished_band_idx";
CREATE INDEX "turns_queued_band_idx" ON "turns" ("tenant_id", "priority", "created_at")
  WHERE "status" = 'queued';
