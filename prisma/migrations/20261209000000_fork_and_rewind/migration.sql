-- Fork, rewind and session overrides (issue 34, docs/adr/0053-fork-and-rewind.md).
--
-- A fork is a new session whose transcript is a prefix of another's: the lineage is kept on the fork
-- (forked_from_session_id, forked_at_turn_id, forked_at_turn_seq: the last turn seq of the prefix, 0
-- when nothing was copied), its turns are copies of the parent's ended turns (copied_from_turn_id),
-- and it may override the agent's model and instructions (overrides, {model?, instructions?}), which
-- every turn of the session then runs with. No foreign keys: lineage outlives what it names, as
-- sessions.parent_session_id does.
ALTER TABLE "sessions" ADD COLUMN "forked_from_session_id" UUID,
  ADD COLUMN "forked_at_turn_id" UUID,
  ADD COLUMN "forked_at_turn_seq" INTEGER,
  ADD COLUMN "overrides" JSONB;

-- A session's forks (GET /v1/sessions/:id/lineage's children).
CREATE INDEX "sessions_forked_from_session_id_idx" ON "sessions"("forked_from_session_id");

-- A rewind marks the turns from the rewound one on (never deleted): they stay in the journal and the
-- transcript, and are left out of the model's history.
ALTER TABLE "turns" ADD COLUMN "rewound_at" TIMESTAMPTZ(3),
  ADD COLUMN "copied_from_turn_id" UUID;

-- Partial index (migration SQL only): an agent's rewound turns, which memory recall leaves out the
-- records of (docs/adr/0053). Rewound turns are few: the index is small, and a read of an agent that
-- never rewound finds nothing in one probe.
CREATE INDEX "turns_rewound_idx" ON "turns" ("tenant_id", "agent_id") WHERE "rewound_at" IS NOT NULL;
