import { WORK_ITEM_TOOLS } from '@switchboard/contracts';
import type { ChatMessage } from '@switchboard/providers';
import type { TurnRun } from './turn-run';

/** The tools that count as a work-item update (seed 002's CreateWorkItem … CompleteWorkItem). */
const isWorkItemTool = (name: string): boolean => WORK_ITEM_TOOLS.includes(name);

/**
 * Rounds (assistant messages) since the last one that made a successful work-item call, counted back
 * from the end; all of them when none did. A tool result is successful when its outcome is `ok`.
 */
export function roundsSinceWorkUpdate(messages: readonly ChatMessage[]): number {
  const succeeded = new Set(
    messages.flatMap((m) =>
      m.role === 'tool' && isWorkItemTool(m.name) && m.content.startsWith('{"ok":true') ? [m.toolCallId] : [],
    ),
  );
  let rounds = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== 'assistant') continue;
    if (m.toolCalls.some((c) => succeeded.has(c.id))) break;
    rounds++;
  }
  return rounds;
}

/**
 * Before a round (docs/adr/0031): the reminder text when the source says one is due, for the
 * provider request only. A failing source costs the round nothing: no reminder.
 */
export async function workReminder(run: TurnRun): Promise<string | null> {
  const source = run.resources.context.workReminder;
  const { input } = run;
  if (!source || !input.agentId || input.agentHasWorkItems === false) return null;
  const staleRounds = roundsSinceWorkUpdate(run.messages);
  if (staleRounds === 0) return null;
  const text = await source({
    tenantId: input.tenantId,
    agentId: input.agentId,
    turnId: input.turnId,
    staleRounds,
    roundsSinceReminder:
      run.lastWorkReminderRound === undefined ? Infinity : run.rounds - run.lastWorkReminderRound,
  }).catch(() => null);
  if (text) run.lastWorkReminderRound = run.rounds;
  return text;
}
