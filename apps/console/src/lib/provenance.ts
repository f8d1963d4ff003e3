import type { components } from '@switchboard/client';

/** Who or what asked for the turn whose call waits: the envelope of the turn's input message. */
export type Provenance = components['schemas']['ApprovalProvenance'];
type AuthorityClass = Provenance['authorityClass'];

/** The message kinds in words. */
const KIND: Record<Provenance['kind'], string> = {
  operator_prompt: 'an operator prompt',
  channel_event: 'a channel event',
  webhook_event: 'a webhook event',
  callback_event: 'a trigger callback',
  timer_tick: 'a timer tick',
  system_tick: 'a system tick',
  task_result: 'a sub-agent task result',
  task_status: 'a sub-agent task status',
  control: 'a control message',
  internal_followup: 'an internal follow-up',
};

/** Where the message came from, in words (the origin's own identifiers kept as they are). */
export function originInWords(origin: Provenance['origin']): string {
  switch (origin.kind) {
    case 'operator':
      return origin.actorId ? `the operator (${origin.actorId})` : 'the operator';
    case 'channel':
      return `channel ${origin.channelId}${origin.senderId ? `, sender ${origin.senderId}` : ''}`;
    case 'webhook':
      return `webhook source ${origin.source}${origin.eventType ? ` (${origin.eventType})` : ''}`;
    case 'callback':
      return `trigger ${origin.triggerId}`;
    case 'timer':
      return `schedule ${origin.scheduleId}`;
    case 'system':
      return `the runtime (${origin.subsystem})`;
    case 'task':
      return `sub-agent task ${origin.taskId}`;
  }
}

/** "a webhook event from webhook source github (push)": the kind and the origin, one sentence part. */
export function askedBy(p: Provenance): string {
  return `${KIND[p.kind]} from ${originInWords(p.origin)}`;
}

/**
 * The authority class as a badge: its words, a tone (external evidence stands out: the call was
 * asked for by external content, which may inform the model but never authorise a write alone),
 * and a title explaining it.
 */
export function authorityBadge(a: AuthorityClass): {
  label: string;
  tone: 'ok' | 'wait' | 'bad';
  title: string;
} {
  switch (a) {
    case 'operator_instruction':
      return { label: 'operator instruction', tone: 'ok', title: 'asked by an authenticated operator' };
    case 'runtime_instruction':
      return {
        label: 'runtime instruction',
        tone: 'ok',
        title: 'asked by the runtime (timer, task, follow-up)',
      };
    case 'integration_signal':
      return { label: 'integration signal', tone: 'wait', title: 'asked by a verified integration (signed)' };
    case 'external_evidence':
      return { label: 'external evidence', tone: 'bad', title: 'asked by external content: untrusted input' };
  }
}
