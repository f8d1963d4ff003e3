import { z } from 'zod';

/** A cheap triage rule: the first rule whose every given field matches decides. */
export const TriageRule = z.strictObject({
  match: z.strictObject({
    eventType: z.string().optional(),
    source: z.string().optional(),
    /** Dotted path into the JSON payload that must equal `equals`. */
    path: z.string().optional(),
    equals: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional(),
  }),
  action: z.enum(['drop', 'forward']),
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
  action: 'drop' | 'forward';
  reason: string;
  rule: number | null;
}

function at(value: unknown, dotted: string): unknown {
  let cur = value;
  for (const key of dotted.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** Rules only, for now: no model is consulted. Without a matching rule the event is forwarded. */
export function applyRules(rules: TriageRule[], event: TriggerEvent): RuleDecision {
  for (let i = 0; i < rules.length; i++) {
    const { match, action, reason } = rules[i];
    if (match.eventType !== undefined && match.eventType !== event.eventType) continue;
    if (match.source !== undefined && match.source !== event.source) continue;
    if (match.path !== undefined && at(event.payload, match.path) !== match.equals) continue;
    return { action, reason: reason ?? `rule ${i} matched`, rule: i };
  }
  return { action: 'forward', reason: 'no rule matched', rule: null };
}
