import {
  contentCipher,
  sealEventData,
  sealJson,
  sealText,
  CONTENT_EVENT_FIELDS,
} from '@switchboard/database';
import type { CheckpointWrites } from './checkpoint';

export { CONTENT_EVENT_FIELDS, sealEventData };

/**
 * A checkpoint's write set with the tenant's content sealed (docs/adr/0067): transcript bodies and
 * tool calls, tool call arguments and results, the turn's final text, the journal's content
 * fields and the parts of what the model saw. The same object, untouched, when no cipher is set or the tenant's mode is off.
 */
export async function sealCheckpoint(w: CheckpointWrites): Promise<CheckpointWrites> {
  const cipher = contentCipher();
  if (!cipher || (await cipher.mode(w.tenantId)) === 'off') return w;
  const t = w.tenantId;
  return {
    ...w,
    messages:
      w.messages &&
      (await Promise.all(
        w.messages.map(async (m) => ({
          ...m,
          body: await sealJson(t, m.body),
          toolCalls: m.toolCalls == null ? m.toolCalls : await sealJson(t, m.toolCalls),
        })),
      )),
    toolCalls:
      w.toolCalls &&
      (await Promise.all(
        w.toolCalls.map(async (c) => ({
          ...c,
          arguments: await sealJson(t, c.arguments ?? {}),
          result: c.result === undefined ? undefined : await sealJson(t, c.result),
          error: c.error === undefined ? undefined : await sealJson(t, c.error),
        })),
      )),
    turn: w.turn?.end
      ? { ...w.turn, end: { ...w.turn.end, finalText: await sealText(t, w.turn.end.finalText) } }
      : w.turn,
    events: await Promise.all(w.events.map(async (e) => ({ ...e, data: await sealEventData(t, e.data) }))),
    // What the model saw (docs/adr/0045): the hash stays that of the plaintext part, so dedup holds.
    contextParts:
      w.contextParts &&
      (await Promise.all(w.contextParts.map(async (p) => ({ ...p, content: await sealJson(t, p.content) })))),
  };
}
