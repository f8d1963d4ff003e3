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
 * tool calls, tool call arguments and results, the turn's final text (and a cancel's note), the journal's content
 * fields, the parts of what the model saw, the arguments of the calls a wait asks about, and a
 * sub-agent task's output and handback. The same object, untouched, when no cipher is set or the tenant's mode is off.
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
      ? {
          ...w.turn,
          end: {
            ...w.turn.end,
            finalText: await sealText(t, w.turn.end.finalText),
            cancel: w.turn.end.cancel && {
              ...w.turn.end.cancel,
              note: await sealText(t, w.turn.end.cancel.note),
            },
          },
        }
      : w.turn,
    // The calls a wait asks a person or the client about (docs/adr/0013, 0047): their arguments.
    approvals:
      w.approvals &&
      (await Promise.all(
        w.approvals.map(async (a) => ({ ...a, arguments: await sealJson(t, a.arguments ?? {}) })),
      )),
    // A sub-agent's end (docs/adr/0024): its output and its handback's result (status stays plain: SQL reads it).
    task: w.task && {
      ...w.task,
      end: {
        ...w.task.end,
        output: await sealText(t, w.task.end.output),
        handback: await sealHandback(t, w.task.end.handback),
      },
    },
    events: await Promise.all(w.events.map(async (e) => ({ ...e, data: await sealEventData(t, e.data) }))),
    // What the model saw (docs/adr/0045): the hash stays that of the plaintext part, so dedup holds.
    contextParts:
      w.contextParts &&
      (await Promise.all(w.contextParts.map(async (p) => ({ ...p, content: await sealJson(t, p.content) })))),
  };
}

/** A task's handback as stored: its content (`result`, `partial`, `question`, `options`) sealed, its status and ids plain. */
export async function sealHandback(tenantId: string, handback: unknown): Promise<unknown> {
  if (!handback || typeof handback !== 'object' || Array.isArray(handback)) return handback;
  const out: Record<string, unknown> = { ...(handback as Record<string, unknown>) };
  for (const field of ['result', 'partial', 'question', 'options'] as const) {
    const value = out[field];
    if (value === undefined || value === null) continue;
    out[field] =
      typeof value === 'string' ? await sealText(tenantId, value) : await sealJson(tenantId, value);
  }
  return out;
}
