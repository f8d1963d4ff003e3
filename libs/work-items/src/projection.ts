import type { ContextQuery, WorkReminderQuery } from '@switchboard/engine';
import { readinessOf, type WorkItemRow, type WorkItemStore } from './store';

/** How much of a plan and of a completion report the prompt shows. */
const PLAN_PREVIEW = 2000;
const REPORT_PREVIEW = 300;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}… [truncated]` : text);
const line = (text: string) => text.replace(/\s+/g, ' ').trim();

const TODO_MARK = { pending: '[ ]', in_progress: '[>]', completed: '[x]' } as const;

function blocker(w: WorkItemRow, now: Date): string {
  if (!w.blockedBy) return '';
  const due = w.recheckAt && !w.recheckConsumedAt && w.recheckAt <= now ? ', recheck due now' : '';
  const at = w.recheckAt && !w.recheckConsumedAt ? ` (recheck at ${w.recheckAt.toISOString()}${due})` : '';
  return `blocked by: ${line(w.blockedBy)}${at}`;
}

/**
 * The work-queue prompt projection (seed 002 "Work-Queue Prompt Projection"): the current item in
 * full, the others by readiness, recent completions only through their promoted reports. Null when
 * the agent has no work items: the message-driven path stays as it was. It goes into the turn's
 * input content, never the system prompt (SPEC §5: the cached prefix stays byte for byte).
 */
export function renderWorkItems(items: WorkItemRow[], now = new Date()): string | null {
  if (items.length === 0) return null;
  const current = items.find((w) => w.current && w.state === 'open');
  const open = items.filter((w) => w.state === 'open' && w !== current);
  const closed = items.filter((w) => w.state !== 'open');
  const out: string[] = ['Work items (the runtime record of your durable objectives):'];
  if (current) {
    out.push('Current work item:');
    out.push(`- id: ${current.id}`, `  objective: ${line(current.objective)}`);
    out.push(`  plan_status: ${current.planStatus}; readiness: ${readinessOf(current)}`);
    if (current.plan) out.push(`  plan: ${cut(current.plan, PLAN_PREVIEW)}`);
    if (current.todoList.length > 0) {
      out.push('  todo_list:');
      for (const t of current.todoList) out.push(`    ${TODO_MARK[t.state]} ${line(t.text)}`);
    }
    if (current.blockedBy) out.push(`  ${blocker(current, now)}`);
  } else {
    out.push('Current work item: none.');
  }
  const group = (title: string, rows: WorkItemRow[], extra: (w: WorkItemRow) => string = () => '') => {
    if (rows.length === 0) return;
    out.push(title);
    for (const w of rows) out.push(`- ${w.id}: ${line(w.objective)}${extra(w)}`);
  };
  const due = (w: WorkItemRow) => !!w.recheckAt && !w.recheckConsumedAt && w.recheckAt <= now;
  group(
    'Blocked, recheck due:',
    open.filter((w) => w.blockedBy && due(w)),
    (w) => ` — ${blocker(w, now)}`,
  );
  group(
    'Queued, runnable (pick_work_item to focus on one):',
    open.filter((w) => readinessOf(w) === 'runnable'),
  );
  group(
    'Waiting for operator input:',
    open.filter((w) => readinessOf(w) === 'waiting_for_operator'),
  );
  group(
    'Blocked:',
    open.filter((w) => w.blockedBy && !due(w)),
    (w) => ` — ${blocker(w, now)}`,
  );
  group(
    'Recently completed:',
    closed.filter((w) => w.state === 'completed' && w.resultSummary),
    (w) => ` — report: ${cut(line(w.resultSummary!), REPORT_PREVIEW)}`,
  );
  out.push(
    'Work on the current item; when it is done, write the report for the operator and call ' +
      'complete_work_item in the same reply.',
  );
  return out.join('\n');
}

/**
 * The engine's context-pack source for work items: binds the turn to the agent's current item when
 * it begins (seed 002 "Turn-End Work-Item Transition Commit"; a later run of the turn keeps the
 * first binding) and renders the projection.
 */
export function workItemContext(store: WorkItemStore): (q: ContextQuery) => Promise<string | null> {
  return async (q) => {
    // An agent that never had a work item has nothing to project or bind: no statement (the claim read it).
    if (!q.agentId || q.hasWorkItems === false) return null;
    return renderWorkItems(
      await store.forPrompt({ tenantId: q.tenantId, agentId: q.agentId, bindTurnId: q.turnId }),
    );
  };
}

/** The stale-progress reminder's thresholds (WORK_ITEM_STALE_REMINDER_*). */
export interface ReminderLimits {
  /** Rounds without a successful work-item call before a reminder. */
  rounds: number;
  /** Rounds between two reminders of one run. */
  cooldownRounds: number;
  /** The reminder's size bound, in tokens (about four characters each). */
  maxTokens: number;
}

/**
 * The provider-only work-item progress reminder (seed 002): derived from the current item's
 * objective, plan status, plan, open todos and blocker, bounded, completed todos left out. It asks
 * for an update only where material progress, a change of scope, a blocker or a finished checklist
 * item actually emerged: it marks no progress by itself.
 */
export function renderReminder(current: WorkItemRow, staleRounds: number, maxChars: number): string {
  const open = current.todoList.filter((t) => t.state !== 'completed');
  const lines = [
    `Runtime reminder (not from the user): ${staleRounds} model rounds have passed without a work-item update.`,
    `Current work item ${current.id}: ${line(current.objective)}`,
    `plan_status: ${current.planStatus}`,
    ...(current.blockedBy ? [`blocked_by: ${line(current.blockedBy)}`] : []),
    ...(open.length > 0 ? ['open todos:', ...open.map((t) => `${TODO_MARK[t.state]} ${line(t.text)}`)] : []),
    ...(current.plan ? [`plan: ${line(current.plan)}`] : []),
    'If material progress, a change of scope, a blocker or a completed checklist item emerged, record it with',
    'update_work_item (or complete_work_item when the objective is met, with your report in the same message);',
    'otherwise carry on without updating.',
  ];
  const text = lines.join('\n');
  return text.length > maxChars ? `${text.slice(0, Math.max(0, maxChars - 14))}… [truncated]` : text;
}

/**
 * The engine's `workReminder` source (docs/adr/0031): nothing until `rounds` rounds passed without a
 * work-item update and `cooldownRounds` since the last reminder; then one read of the agent's
 * current item (none open: no reminder).
 */
export function workItemReminder(
  store: WorkItemStore,
  limits: ReminderLimits,
): (q: WorkReminderQuery) => Promise<string | null> {
  return async (q) => {
    if (q.staleRounds < limits.rounds || q.roundsSinceReminder < limits.cooldownRounds) return null;
    const items = await store.forPrompt({ tenantId: q.tenantId, agentId: q.agentId }, 0);
    const current = items.find((w) => w.current && w.state === 'open');
    return current ? renderReminder(current, q.staleRounds, limits.maxTokens * 4) : null;
  };
}
