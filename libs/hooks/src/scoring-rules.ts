import { isDeepStrictEqual } from 'node:util';
import { checkStructuredAnswer, type Scorer } from '@switchboard/contracts';

/** A rule scorer (docs/adr/0062). */
export type RuleScorer = Extract<Scorer, { kind: 'rule' }>;

/** What a rule reads of the turn. */
export interface RuleTurn {
  status: string;
  finalText: string | null;
  /** completed_at − started_at (else created_at), ms; null for a turn with neither. */
  latencyMs: number | null;
  /** The turn's own cost, USD. */
  costUsd: number;
  /** The names of the tools the turn called. */
  tools: string[];
}

/** A rule's verdict: 1 and passed, or 0 and why not. */
export interface RuleVerdict {
  score: 0 | 1;
  passed: boolean;
  reason: string | null;
}

const pass = (reason: string | null = null): RuleVerdict => ({ score: 1, passed: true, reason });
const fail = (reason: string): RuleVerdict => ({ score: 0, passed: false, reason });

/** Parses JSON text, tolerating one Markdown code fence around it; undefined when it is not JSON. */
function parseJson(text: string): { value: unknown } | undefined {
  const t = text
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '');
  try {
    return { value: JSON.parse(t) as unknown };
  } catch {
    return undefined;
  }
}

/** Scores the turn by the rule: deterministic, no I/O. */
export function evaluateRule(rule: RuleScorer, turn: RuleTurn): RuleVerdict {
  const answer = turn.finalText ?? '';
  switch (rule.check) {
    case 'json_schema': {
      const r = checkStructuredAnswer({ type: 'json_schema', name: 'scorer', schema: rule.schema }, answer);
      return r.ok ? pass() : fail(r.message.slice(0, 500));
    }
    case 'regex': {
      let re: RegExp;
      try {
        re = new RegExp(rule.pattern, rule.flags);
      } catch (err) {
        return fail(`the pattern is not usable: ${(err as Error).message}`);
      }
      return re.test(answer)
        ? pass()
        : fail(`the answer does not match /${rule.pattern}/${rule.flags ?? ''}`);
    }
    case 'tool_called': {
      const called = turn.tools.includes(rule.tool);
      if (called === rule.called) return pass();
      return fail(rule.called ? `${rule.tool} was not called` : `${rule.tool} was called`);
    }
    case 'max_latency_ms':
      if (turn.latencyMs === null) return fail('the turn has no latency');
      return turn.latencyMs <= rule.maxMs
        ? pass()
        : fail(`took ${Math.round(turn.latencyMs)} ms, over ${rule.maxMs} ms`);
    case 'max_cost_usd':
      return turn.costUsd <= rule.maxUsd ? pass() : fail(`cost ${turn.costUsd} USD, over ${rule.maxUsd} USD`);
    case 'not_failed':
      return turn.status === 'failed' ? fail('the turn failed') : pass();
    case 'expected': {
      const match = rule.match ?? 'exact';
      const got = answer.trim();
      const want = rule.expected.trim();
      if (match === 'exact') return got === want ? pass() : fail('the answer is not the expected text');
      if (match === 'contains') {
        return got.includes(want) ? pass() : fail('the answer does not contain the expected text');
      }
      const a = parseJson(got);
      const b = parseJson(want);
      if (!b) return fail('the expected text is not JSON');
      if (!a) return fail('the answer is not JSON');
      return isDeepStrictEqual(a.value, b.value) ? pass() : fail('the answer is not the expected JSON');
    }
  }
}
