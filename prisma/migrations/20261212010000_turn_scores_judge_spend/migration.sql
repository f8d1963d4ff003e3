-- The evaluation budget (docs/adr/0062): before each LLM-judge call the scoring hook sums what the
-- tenant's judges spent today (turn_scores.cost_usd since UTC midnight). This index keeps that read to
-- today's judge rows of the tenant, not every score it ever had.
CREATE INDEX "turn_scores_judge_spend_idx" ON "turn_scores"("tenant_id", "created_at")
  WHERE "source" = 'scorer' AND "kind" = 'llm_judge';
