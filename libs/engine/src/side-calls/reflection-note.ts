import type { ChatMessage } from '@switchboard/providers';

/** How a reflection sits in the turn: a runtime note the model reads before its next round. */
export const REFLECTION_OPEN = '<reflection>';

export function reflectionNote(text: string): string {
  return `${REFLECTION_OPEN}\n${text}\n</reflection>\nThis is your own reflection on the turn so far; use it to choose the next step.`;
}

export const isReflectionNote = (m: ChatMessage): boolean =>
  m.role === 'user' && m.content.startsWith(REFLECTION_OPEN);
