import { z } from 'zod';

/**
 * What triage decides for a delivery (seed 000 "Triage", SPEC §10; docs/adr/0018):
 * `drop` records it only; `notify` sends a signed notification to the tenant's endpoint;
 * `spawn_reactor` runs a light turn (tight iteration budget); `spawn_orchestrator` a full turn.
 */
export const TriageAction = z.enum(['drop', 'notify', 'spawn_reactor', 'spawn_orchestrator']);
export type TriageAction = z.infer<typeof TriageAction>;

const Scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/**
 * A JSON path, a small documented subset of JSONPath: dot-separated keys with optional array
 * indices, e.g. `pull_request.labels[0].name` or `pull_request.labels.0.name`; an optional
 * leading `$.` is accepted. No wildcards, filters or recursive descent.
 */
export const JsonPath = z
  .string()
  .min(1)
  .max(200)
  .regex(/^(\$\.)?[^.[\]]+(\[\d+\])*(\.[^.[\]]+(\[\d+\])*)*$/, {
    message: 'must be dot-separated keys with optional [index], e.g. "pull_request.labels[0].name"',
  });

/** One JSON-path filter: the value at `path` must equal `equals`, be one of `in`, or (not) exist. */
export const PathFilter = z
  .strictObject({
    path: JsonPath,
    equals: Scalar.optional(),
    in: z.array(Scalar).min(1).max(50).optional(),
    exists: z.boolean().optional(),
  })
  .refine((f) => [f.equals, f.in, f.exists].filter((v) => v !== undefined).length === 1, {
    message: 'exactly one of equals, in, exists',
  });
export type PathFilter = z.infer<typeof PathFilter>;

/**
 * A cheap triage rule: the first rule whose every given condition matches decides. `forward`
 * (the action before the decision pipeline) is read as `spawn_orchestrator`.
 */
export const TriageRule = z.strictObject({
  match: z
    .strictObject({
      eventType: z.string().optional(),
      /** Any of these event types. */
      eventTypes: z.array(z.string()).min(1).max(50).optional(),
      source: z.string().optional(),
      /** Shorthand for one filter: the value at `path` must equal `equals`. */
      path: JsonPath.optional(),
      equals: Scalar.optional(),
      /** Every filter must hold. */
      where: z.array(PathFilter).max(20).optional(),
    })
    .refine((m) => (m.path === undefined) === (m.equals === undefined), {
      message: 'path and equals go together',
    }),
  action: z.union([TriageAction, z.literal('forward').transform(() => 'spawn_orchestrator' as const)]),
  reason: z.string().max(200).optional(),
});
export type TriageRule = z.infer<typeof TriageRule>;
export const TriageRules = z.array(TriageRule).max(100);

export interface TriggerEvent {
  source: string;
  eventType?: string;
  payload: unknown;
}

export interface RuleDecision {
  action: TriageAction;
  reason: string;
  rule: number;
}

/** The value at a JsonPath, or undefined when any step is missing. */
export function valueAt(value: unknown, path: string): unknown {
  const keys = path
    .replace(/^\$\./, '')
    .replace(/\[(\d+)\]/g, '.$1')
    .split('.');
  let cur = value;
  for (const key of keys) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (!Object.hasOwn(cur, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

function holds(filter: PathFilter, payload: unknown): boolean {
  const v = valueAt(payload, filter.path);
  if (filter.exists !== undefined) return (v !== undefined) === filter.exists;
  if (filter.in !== undefined) return filter.in.some((x) => x === v);
  return v === filter.equals;
}

/**
 * The rules' decision, or null when no rule matched (the model decides then). Pure and cheap:
 * evaluated before any model call.
 */
export function applyRules(rules: TriageRule[], event: TriggerEvent): RuleDecision | null {
  for (let i = 0; i < rules.length; i++) {
    const { match, action, reason } = rules[i];
    if (match.eventType !== undefined && match.eventType !== event.eventType) continue;
    if (match.eventTypes !== undefined && !match.eventTypes.includes(event.eventType ?? '')) continue;
    if (match.source !== undefined && match.source !== event.source) continue;
    if (match.path !== undefined && valueAt(event.payload, match.path) !== match.equals) continue;
    if (match.where !== undefined && !match.where.every((f) => holds(f, event.payload))) continue;
    return { action, reason: reason ?? `rule ${i} matched`, rule: i };
  }
  return null;
}
