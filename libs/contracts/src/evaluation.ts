import { z } from 'zod';
import { ModelRef } from './model-refs';
import { responseFormatProblem } from './structured-output';

/**
 * Evaluation (docs/adr/0062): an agent's scorers, versioned with its configuration (docs/adr/0061),
 * score each ended turn's final answer in the `scoring` post-turn hook; feedback is posted later.
 */

/** A scorer's name: unique within the agent; `feedback` is the name of posted feedback. */
export const ScorerName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9][a-z0-9_:-]*$/, {
    message: 'must be 1 to 64 lowercase letters, digits, "_", ":" or "-", starting with a letter or digit',
  });

/** The share of turns a scorer scores, in percent (deterministic per trace, docs/adr/0062). */
export const SamplePercent = z.number().min(0).max(100);

/** What `hint:evaluation` is: the judge's default, resolved through the tenant's `modelRoutes.evaluation`. */
export const EVALUATION_HINT = 'hint:evaluation';

const base = { name: ScorerName, samplePercent: SamplePercent.default(100) };

/** An LLM judge: the rubric, the model (default `hint:evaluation`); it answers `{score: 0..1, reason}`. */
export const LlmJudgeScorer = z.strictObject({
  ...base,
  kind: z.literal('llm_judge'),
  rubric: z.string().min(1).max(8000),
  model: ModelRef.optional(),
  passThreshold: z.number().min(0).max(1).optional(),
});

const JsonSchemaObject = z.record(z.string(), z.unknown());

/** A deterministic check of the turn: scores 1 (passed) or 0. */
export const RuleScorer = z.discriminatedUnion('check', [
  z.strictObject({
    ...base,
    kind: z.literal('rule'),
    check: z.literal('json_schema'),
    schema: JsonSchemaObject,
  }),
  z.strictObject({
    ...base,
    kind: z.literal('rule'),
    check: z.literal('regex'),
    pattern: z.string().min(1).max(2000),
    flags: z
      .string()
      .regex(/^[imsu]*$/, { message: 'flags may only be i, m, s and u' })
      .max(4)
      .optional(),
  }),
  z.strictObject({
    ...base,
    kind: z.literal('rule'),
    check: z.literal('tool_called'),
    tool: z.string().min(1).max(120),
    called: z.boolean(),
  }),
  z.strictObject({
    ...base,
    kind: z.literal('rule'),
    check: z.literal('max_latency_ms'),
    maxMs: z.int().min(1).max(86_400_000),
  }),
  z.strictObject({
    ...base,
    kind: z.literal('rule'),
    check: z.literal('max_cost_usd'),
    maxUsd: z.number().min(0).max(1_000_000),
  }),
  z.strictObject({ ...base, kind: z.literal('rule'), check: z.literal('not_failed') }),
  z.strictObject({
    ...base,
    kind: z.literal('rule'),
    check: z.literal('expected'),
    expected: z.string().max(32_768),
    match: z.enum(['exact', 'contains', 'json']).optional(),
  }),
]);

/** An external scorer: POSTed the turn's answer, signed like the completion webhook; answers `{score, passed?, reason?}`. */
export const WebhookScorer = z.strictObject({
  ...base,
  kind: z.literal('webhook'),
  url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(2000),
  timeoutMs: z.int().min(100).max(60_000).optional(),
});

export const Scorer = z.union([LlmJudgeScorer, RuleScorer, WebhookScorer]);
export type Scorer = z.infer<typeof Scorer>;
export type ScorerKind = Scorer['kind'];

/** An agent's scorers: at most 20, names unique, every json_schema and regex usable. */
export const Scorers = z
  .array(Scorer)
  .max(20)
  .superRefine((scorers, ctx) => {
    const names = scorers.map((s) => s.name);
    const duplicates = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))];
    if (duplicates.length > 0) {
      ctx.addIssue({ code: 'custom', message: `duplicate scorer names: ${duplicates.join(', ')}` });
    }
    scorers.forEach((s, i) => {
      const problem = scorerProblem(s);
      if (problem) ctx.addIssue({ code: 'custom', path: [i], message: problem });
    });
  });

/** Why a scorer cannot be used (a schema that does not compile, a pattern that is not a RegExp), or undefined. */
export function scorerProblem(s: Scorer): string | undefined {
  if (s.kind !== 'rule') return undefined;
  if (s.check === 'json_schema') {
    return responseFormatProblem({ type: 'json_schema', name: 'scorer', schema: s.schema });
  }
  if (s.check === 'regex') {
    try {
      new RegExp(s.pattern, s.flags);
    } catch (err) {
      return `pattern is not a valid regular expression: ${(err as Error).message}`;
    }
  }
  return undefined;
}

/** The scorers stored on an agent or version, read tolerantly: an entry that does not parse is dropped. */
export function parseScorers(stored: unknown): Scorer[] {
  if (!Array.isArray(stored)) return [];
  const out: Scorer[] = [];
  for (const s of stored) {
    const parsed = Scorer.safeParse(s);
    if (parsed.success) out.push(parsed.data);
  }
  return out;
}

/** The tenant's evaluation settings: what its judges may spend per UTC day, in USD. */
export const EvaluationSettings = z.strictObject({
  dailyBudgetUsd: z.number().min(0).max(1_000_000).optional(),
});
export type EvaluationSettings = z.infer<typeof EvaluationSettings>;

/** POST /v1/turns/:id/feedback. */
export const TurnFeedbackRequest = z
  .strictObject({
    score: z.number().min(0).max(1).optional(),
    rating: z.enum(['up', 'down']).optional(),
    label: z.string().trim().min(1).max(100).optional(),
    value: z.number().finite().optional(),
    comment: z.string().max(2000).optional(),
    by: z.string().trim().min(1).max(200),
  })
  .refine(
    (v) => v.score !== undefined || v.rating !== undefined || v.label !== undefined || v.value !== undefined,
    { message: 'at least one of score, rating, label or value is required' },
  );
export type TurnFeedbackRequest = z.infer<typeof TurnFeedbackRequest>;

/** GET /v1/agents/:id/scores: `from` and `to` are dates or timestamps (default: the last 30 days). */
export const AgentScoresQuery = z.strictObject({
  from: z.iso.datetime({ offset: true }).or(z.iso.date()).optional(),
  to: z.iso.datetime({ offset: true }).or(z.iso.date()).optional(),
  scorer: ScorerName.optional(),
});
export type AgentScoresQuery = z.infer<typeof AgentScoresQuery>;
