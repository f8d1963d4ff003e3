-- The tool choice a request forced for its turn's first model round (docs/adr/0047): null = auto.
ALTER TABLE "turns" ADD COLUMN "tool_choice" JSONB;
