-- Structured output (docs/adr/0048): the format the client asked the turn's final answer to have,
-- {type: json_object} or {type: json_schema, name, schema, strict?}; null for plain text. Stored
-- with the turn so a run on any worker, resumed or not, validates against it. Nullable, no default:
-- adding it rewrites no partition.
-- AlterTable
ALTER TABLE "turns" ADD COLUMN "response_format" JSONB;
