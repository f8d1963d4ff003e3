import { newId, type PostTurnJob } from '@switchboard/contracts';
import { json, sql } from '@switchboard/store';
import {
  MEMORY_TITLE_MAX_CHARS,
  memoryInsertSql,
  prepareMemory,
  type MemoryWrite,
} from '@switchboard/memory';
import { bounded, claimHookRun, hookSpan, loadTurnSnapshot, type TurnSnapshot } from './archivist-snapshot';
import type { HookContext } from './context';

export const EPISODIC_HOOK = 'episodic-index';

/** An episode's title is the start of the user input, at most this long. */
export const EPISODE_TITLE_CHARS = 120;

/** The episode's text: the user input and the assistant's (final or partial) answer, each bounded by the snapshot. */
export function episodeContent(s: TurnSnapshot): string {
  const answer = s.status === 'cancelled' ? 'Assistant (partial, the turn was cancelled)' : 'Assistant';
  return [`User: ${s.input.text || '(empty)'}`, '', `${answer}: ${s.assistant.text || '(no answer)'}`].join(
    '\n',
  );
}

/** The title: the input's first line, bounded. */
export function episodeTitle(s: TurnSnapshot): string {
  const firstLine = (s.input.text || s.assistant.text).split('\n', 1)[0].trim();
  return bounded(firstLine, Math.min(EPISODE_TITLE_CHARS, MEMORY_TITLE_MAX_CHARS - 1)).text;
}

/**
 * The episodic-index hook (seed 000 "Episodic memory indexing"): the turn as one searchable memory
 * record of kind `episode` (title from the user input; content = input + final text, bounded), with
 * provenance, under the dedupe key `episode:<turn id>`. Completed and cancelled turns are indexed
 * (a cancelled one with what it said so far); a failed turn, or one with neither input nor answer,
 * is skipped and recorded. The record and the `hook_runs` row commit in one statement after one
 * read: a re-run finds the row and writes nothing (`already_done`). No model call.
 */
export async function runEpisodicIndex(
  ctx: HookContext,
  job: PostTurnJob,
): Promise<'written' | 'already_done' | 'skipped'> {
  const { outcome } = await hookSpan(EPISODIC_HOOK, job, async () => {
    const r = await index(ctx, job);
    ctx.logger.info(
      { hook: EPISODIC_HOOK, turnId: job.turnId, outcome: r.outcome, reason: r.reason },
      'episodic index run',
    );
    return r;
  });
  return outcome;
}

async function index(
  ctx: HookContext,
  job: PostTurnJob,
): Promise<{ outcome: 'written' | 'already_done' | 'skipped'; reason?: string }> {
  const s = await loadTurnSnapshot(ctx.sql, job, EPISODIC_HOOK, ctx.snapshots);
  if (!s) return { outcome: 'skipped', reason: 'no_ended_turn' };
  if (s.done) return { outcome: 'already_done' };
  const skip =
    s.status === 'failed'
      ? 'turn_failed'
      : !s.input.text && !s.assistant.text
        ? 'nothing_to_index'
        : undefined;
  const dedupeKey = `episode:${s.turnId}`;
  const run = {
    tenantId: s.tenantId,
    turnId: s.turnId,
    hook: EPISODIC_HOOK,
    output: skip ? { skipped: skip, turnStatus: s.status } : { dedupeKey, turnStatus: s.status },
  };
  const written = skip
    ? await claimHookRun(ctx.sql, run)
    : await claimAndWrite(ctx, run, {
        tenantId: s.tenantId,
        agentId: s.agentId,
        kind: 'episode',
        title: episodeTitle(s),
        content: episodeContent(s),
        dedupeKey,
        provenance: {
          source: 'episodic',
          hook: EPISODIC_HOOK,
          turnId: s.turnId,
          sessionId: s.sessionId,
          messageSeqs: s.messageSeqs,
        },
      });
  if (!written) return { outcome: 'already_done' };
  return skip ? { outcome: 'skipped', reason: skip } : { outcome: 'written' };
}

/**
 * The run's `hook_runs` row and the episode in one statement: the episode is inserted only when this
 * statement inserted the row, so a re-run, or runs racing for one turn, write it once. True when claimed.
 */
async function claimAndWrite(
  ctx: HookContext,
  run: { tenantId: string; turnId: string; hook: string; output: Record<string, unknown> },
  record: MemoryWrite,
): Promise<boolean> {
  const prepared = await prepareMemory([record]);
  const row = await ctx.sql.first<{ claimed: boolean }>(sql`
    WITH claim AS (
      INSERT INTO hook_runs (id, tenant_id, turn_id, turn_at, hook, status, output, completed_at)
      VALUES (${newId()}::uuid, ${run.tenantId}::uuid, ${run.turnId}::uuid, sb_uuid7_time(${run.turnId}::uuid),
        ${run.hook}, 'completed',
        ${json(run.output)}::jsonb, now())
      ON CONFLICT (turn_id, hook, turn_at) DO NOTHING
      RETURNING 1
    ),
    mem AS (${memoryInsertSql(prepared, sql`EXISTS (SELECT 1 FROM claim)`)})
    SELECT EXISTS (SELECT 1 FROM claim) AS claimed`);
  return row?.claimed === true;
}
