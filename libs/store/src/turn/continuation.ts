import { sql, type Sql } from '../sql';
import { ENDED } from './statuses';

/**
 * Continuation resolution (seed 002 "Continuation Resolution", docs/adr/0057): when a turn is first
 * claimed, which waiting reason of the session's previous ended turn its input matched, with the
 * evidence. Derived from the closure snapshot that existed before the input became the active run
 * (the previous turn's `closure`), in the claim's own `UPDATE` (no statement of its own), and kept on
 * `turns.continuation`: null when the previous turn was not waiting (or had no closure yet).
 *
 * Matches: `task_result` ↔ `awaiting_task_result` (its task among the closure's `taskIds`);
 * `operator_prompt` ↔ `awaiting_operator_input`; `timer_tick` / `system_tick` ↔ `awaiting_timer`;
 * `webhook_event` / `callback_event` / `channel_event` ↔ `awaiting_external_change`. An operator's
 * prompt still runs whatever the prior wait (seed 002: operator input is the default override); it is
 * recorded as not matched.
 */
export interface ContinuationResolution {
  modelVisible: boolean;
  priorClosureOutcome: 'waiting';
  priorWaitingReason:
    'awaiting_operator_input' | 'awaiting_external_change' | 'awaiting_task_result' | 'awaiting_timer';
  /** The session's previous ended turn, whose closure this resolves. */
  priorTurnId: string;
  matchedWaitingReason: boolean;
  /** `prior_turn:<id>`, `message:<id>`, `kind:<kind>`, and `task:<id>` for a task's message. */
  evidence: string[];
}

/** The waiting reason a message kind (and task) matches, in SQL: `m` the input message, `c` the prior closure. */
const MATCHES = (m: Sql, c: Sql): Sql => sql`CASE ${c} ->> 'waitingReason'
    WHEN 'awaiting_task_result' THEN ${m}.kind = 'task_result'
      AND (${c} -> 'taskIds' IS NULL OR (${c} -> 'taskIds') @> to_jsonb(${m}.task_id::text))
    WHEN 'awaiting_operator_input' THEN ${m}.kind = 'operator_prompt'
    WHEN 'awaiting_timer' THEN ${m}.kind IN ('timer_tick', 'system_tick')
    WHEN 'awaiting_external_change' THEN ${m}.kind IN ('webhook_event', 'callback_event', 'channel_event')
    ELSE false END`;

/**
 * The `continuation` column's value for the turn row `t` being claimed: derived on its first run
 * (`run_count` still 0 in the SET), kept on every later one.
 */
export const continuationSet = (t: Sql): Sql => sql`continuation = CASE
    WHEN ${t}.run_count = 0 AND ${t}.continuation IS NULL THEN (
      SELECT jsonb_build_object(
        'modelVisible', m.kind <> 'task_status',
        'priorClosureOutcome', p.closure ->> 'outcome',
        'priorWaitingReason', p.closure ->> 'waitingReason',
        'priorTurnId', p.id,
        'matchedWaitingReason', coalesce(${MATCHES(sql`m`, sql`p.closure`)}, false),
        'evidence', to_jsonb(array_remove(ARRAY['prior_turn:' || p.id, 'message:' || m.id, 'kind:' || m.kind,
          CASE WHEN m.task_id IS NOT NULL THEN 'task:' || m.task_id END], NULL)))
      FROM (SELECT pt.id, pt.closure FROM turns pt
          WHERE pt.session_id = ${t}.session_id AND pt.seq < ${t}.seq AND pt.status IN ${ENDED}
          ORDER BY pt.seq DESC LIMIT 1) p
        JOIN messages m ON m.id = ${t}.input_message_id
      WHERE p.closure ->> 'outcome' = 'waiting')
    ELSE ${t}.continuation END`;
