import type { AgentLearning } from '@switchboard/store';

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/**
 * The agent's learning feedback as the text of one evidence block (docs/adr/0059): its newest kept
 * reflections, hints for the tools whose calls often failed (from its tool statistics) and its user
 * profile record. Deterministic for the same rows; null when there is nothing to say.
 */
export function renderLearning(learning: AgentLearning | null | undefined): string | null {
  if (!learning) return null;
  const out: string[] = [];
  if (learning.reflections.length > 0) {
    out.push('Your own reflections from earlier turns, newest first:');
    for (const r of learning.reflections) out.push(`- ${oneLine(r)}`);
  }
  if (learning.toolHints.length > 0) {
    out.push('Tools whose calls often failed for you (from your tool statistics):');
    for (const h of learning.toolHints) {
      const kinds = Object.entries(h.failuresByKind)
        .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
        .map(([k, n]) => `${k} ×${n}`)
        .join(', ');
      const last = h.lastFailureKind ? `; last: ${h.lastFailureKind}` : '';
      out.push(`- ${h.tool}: ${h.failures} of ${h.calls} calls failed (${kinds || 'unknown'}${last})`);
    }
  }
  if (learning.userProfile) {
    out.push("Your user's profile (from the preferences you were told):", learning.userProfile);
  }
  return out.length > 0 ? out.join('\n') : null;
}
