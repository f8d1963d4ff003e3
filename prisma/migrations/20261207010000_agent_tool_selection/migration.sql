-- Semantic tool selection and the agent's embedder (docs/adr/0049): `tool_selection` holds
-- `maxPerTurn` and `pinned`; `embedder` names the `<provider>/<model>` that embeds for the agent
-- (NULL: the built-in local/words-100d). IF NOT EXISTS: memory recall (issue 33) reads the same
-- embedder column, and either change may land first.
-- AlterTable
ALTER TABLE "agents" ADD COLUMN IF NOT EXISTS "tool_selection" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN IF NOT EXISTS "embedder" TEXT;
