import type { Scorer } from '@switchboard/contracts';
import { sql } from '@switchboard/store';
import type { HookContext } from './context';

/**
 * The scorers a turn gets beyond its version's (docs/adr/0063): a turn an experiment admitted (its
 * input message's sourceRefs name a dataset item) is also scored against that item — its expected
 * answer by the rule `dataset:expected`, its rubric by the judge `dataset:rubric` (not sampled). Any
 * other turn gets none. The scoring hook (docs/adr/0062) runs `[...versionScorers, ...extra]`.
 */

export async function extraScorersFor(
  ctx: HookContext,
  turn: { id: string; tenantId: string; sessionId: string | null },
): Promise<Scorer[]> {
  const item = await ctx.sql.first<{ expected: string | null; match: string; rubric: string | null }>(sql`
    SELECT i.expected, i.match, i.rubric
    FROM turns t
    JOIN messages m ON m.id = t.input_message_id
    JOIN dataset_items i ON i.id = (m.source_refs->>'datasetItemId')::uuid AND i.tenant_id = t.tenant_id
    WHERE t.id = ${turn.id}::uuid AND t.tenant_id = ${turn.tenantId}::uuid
      AND m.source_refs ? 'experimentId'
      AND m.source_refs->>'datasetItemId' ~ '^[0-9a-f-]{36}$'`);
  if (!item) return [];
  const scorers: Scorer[] = [];
  if (item.expected !== null) {
    scorers.push({
      name: 'dataset:expected',
      kind: 'rule',
      check: 'expected',
      expected: item.expected,
      match: item.match === 'contains' || item.match === 'json' ? item.match : 'exact',
      samplePercent: 100,
    });
  }
  if (item.rubric !== null) {
    scorers.push({ name: 'dataset:rubric', kind: 'llm_judge', rubric: item.rubric, samplePercent: 100 });
  }
  return scorers;
}
