-- Learning feedback (docs/adr/0059): the reflections an agent's turns wrote, kept across turns, and
-- the agent's user profile record. Both are written by the `learning` post-turn hook in the
-- statement that inserts its hook_runs row (a re-run writes nothing), and read by the turn claim
-- only for an agent whose `memory.learning` is on.
CREATE TABLE "agent_reflections" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "agent_id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "turn_id" UUID NOT NULL,
    "reflection_index" INTEGER NOT NULL,
    "text" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_reflections_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "agent_reflections_text_check" CHECK (char_length("text") <= 2000)
);

CREATE UNIQUE INDEX "agent_reflections_turn_id_reflection_index_key" ON "agent_reflections"("turn_id", "reflection_index");
CREATE INDEX "agent_reflections_agent_id_created_at_idx" ON "agent_reflections"("agent_id", "created_at");
CREATE INDEX "agent_reflections_tenant_id_idx" ON "agent_reflections"("tenant_id");

CREATE TABLE "agent_user_profiles" (
    "agent_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "content" TEXT NOT NULL,
    "source_refs" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "version" INTEGER NOT NULL DEFAULT 1,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_user_profiles_pkey" PRIMARY KEY ("agent_id"),
    CONSTRAINT "agent_user_profiles_content_check" CHECK (char_length("content") <= 2000)
);

CREATE INDEX "agent_user_profiles_tenant_id_idx" ON "agent_user_profiles"("tenant_id");
