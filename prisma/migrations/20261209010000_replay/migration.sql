-- Replay (issue 34, docs/adr/0054): a turn that runs an ended turn's input again in a fork taken just
-- before it names the turn it replays; a side-effecting call of the replay that was answered from the
-- original's recorded result (never executed) names the original's tool call.
ALTER TABLE "turns" ADD COLUMN "replay_of_turn_id" UUID;
ALTER TABLE "tool_calls" ADD COLUMN "replayed_from_tool_call_id" UUID;

-- The replays of a turn.
CREATE INDEX "turns_replay_of_turn_id_idx" ON "turns" ("replay_of_turn_id")
  WHERE "replay_of_turn_id" IS NOT NULL;

-- An original call answers at most one call of a replay turn: a second checkpoint that tried to use
-- it again fails instead of committing (the engine never asks; this is the database's word on it).
CREATE UNIQUE INDEX "tool_calls_replayed_from_once_idx" ON "tool_calls" ("turn_id", "replayed_from_tool_call_id")
  WHERE "replayed_from_tool_call_id" IS NOT NULL;
