import { z } from 'zod';

/** Seed 002 "Message Kinds" as the cloud service admits them (SPEC §2). */
export const MessageKind = z.enum([
  'operator_prompt',
  'channel_event',
  'webhook_event',
  'callback_event',
  'timer_tick',
  'system_tick',
  'task_result',
  'task_status',
  'control',
  'internal_followup',
]);
export type MessageKind = z.infer<typeof MessageKind>;

export const MessageOrigin = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('operator'), actorId: z.string().optional() }),
  z.object({ kind: z.literal('channel'), channelId: z.string(), senderId: z.string().optional() }),
  z.object({ kind: z.literal('webhook'), source: z.string(), eventType: z.string().optional() }),
  z.object({ kind: z.literal('callback'), triggerId: z.string() }),
  z.object({ kind: z.literal('timer'), scheduleId: z.string() }),
  z.object({ kind: z.literal('system'), subsystem: z.string() }),
  z.object({ kind: z.literal('task'), taskId: z.string() }),
]);
export type MessageOrigin = z.infer<typeof MessageOrigin>;

export const TrustLevel = z.enum([
  'trusted_operator',
  'trusted_system',
  'trusted_integration',
  'untrusted_external',
]);
export type TrustLevel = z.infer<typeof TrustLevel>;

export const AuthorityClass = z.enum([
  'operator_instruction',
  'runtime_instruction',
  'integration_signal',
  'external_evidence',
]);
export type AuthorityClass = z.infer<typeof AuthorityClass>;

/** Scheduling hint, never a trust signal. Ordered from most to least urgent. */
export const Priority = z.enum(['interject', 'next', 'normal', 'background']);
export type Priority = z.infer<typeof Priority>;

export const DeliverySurface = z.enum([
  'http_public_enqueue',
  'http_webhook',
  'http_callback_enqueue',
  'http_control_prompt',
  'timer_scheduler',
  'runtime_system',
  'task_rejoin',
]);
export type DeliverySurface = z.infer<typeof DeliverySurface>;

export const AdmissionContext = z.enum([
  'control_authenticated',
  'external_trigger_capability',
  'runtime_owned',
]);
export type AdmissionContext = z.infer<typeof AdmissionContext>;

/** An image a user message carries (a `data:` URL or an https URL), passed to models that take images. */
export const MessageImage = z.object({
  url: z.string(),
  detail: z.enum(['auto', 'low', 'high']).optional(),
});
export type MessageImage = z.infer<typeof MessageImage>;

export const MessageBody = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string(), images: z.array(MessageImage).optional() }),
  z.object({ type: z.literal('json'), value: z.unknown() }),
  z.object({
    type: z.literal('brief'),
    title: z.string().optional(),
    text: z.string(),
    attachments: z.array(z.object({ uri: z.string().optional(), value: z.unknown().optional() })).optional(),
  }),
]);
export type MessageBody = z.infer<typeof MessageBody>;

/**
 * Seed 002 `triggerKind` (docs/adr/0060): the admission trigger, derived by the runtime from the
 * message kind (a total classification; never accepted from a caller). Webhook, callback and channel
 * events are all `external_event`; an operator's prompt is `operator_input`, the one default override
 * of a waiting state.
 */
export const ContinuationTriggerKind = z.enum([
  'operator_input',
  'external_event',
  'timer_tick',
  'system_tick',
  'task_result',
  'task_status',
  'control',
  'internal_followup',
]);
export type ContinuationTriggerKind = z.infer<typeof ContinuationTriggerKind>;

export function triggerKindOf(kind: MessageKind): ContinuationTriggerKind {
  switch (kind) {
    case 'operator_prompt':
      return 'operator_input';
    case 'channel_event':
    case 'webhook_event':
    case 'callback_event':
      return 'external_event';
    case 'timer_tick':
    case 'system_tick':
    case 'task_result':
    case 'task_status':
    case 'control':
    case 'internal_followup':
      return kind;
  }
}

/**
 * Seed 002 `sourceRefs` (docs/adr/0060): stable raw source references (trigger id, delivery id, wake
 * hint id...), projected by runtime-owned ingress only; a client's metadata never becomes one.
 */
export const SourceRefs = z.record(z.string().max(100), z.string().max(500));
export type SourceRefs = z.infer<typeof SourceRefs>;

export const MessageEnvelope = z.object({
  id: z.uuid(),
  tenantId: z.uuid(),
  agentId: z.uuid(),
  sessionId: z.uuid(),
  createdAt: z.iso.datetime(),
  kind: MessageKind,
  origin: MessageOrigin,
  trust: TrustLevel,
  authorityClass: AuthorityClass,
  priority: Priority,
  deliverySurface: DeliverySurface,
  admissionContext: AdmissionContext,
  body: MessageBody,
  metadata: z.record(z.string(), z.unknown()),
  correlationId: z.string().nullable(),
  causationId: z.string().nullable(),
  workItemId: z.uuid().nullable(),
  taskId: z.uuid().nullable(),
  /** Derived from `kind` (`triggerKindOf`); optional for envelopes written before it. */
  triggerKind: ContinuationTriggerKind.optional(),
  sourceRefs: SourceRefs.optional(),
});
export type MessageEnvelope = z.infer<typeof MessageEnvelope>;

/** Seed 002 "Trust Defaults". */
export function defaultTrust(origin: MessageOrigin): TrustLevel {
  switch (origin.kind) {
    case 'operator':
      return 'trusted_operator';
    case 'system':
    case 'task':
    case 'timer':
      return 'trusted_system';
    case 'callback':
    case 'webhook':
      return 'trusted_integration';
    case 'channel':
      return 'untrusted_external';
  }
}

/**
 * Derived by the runtime at admission, never accepted from a caller (SPEC §2).
 * `verifiedIntegration` is true only when the ingress authenticated the sender
 * (capability token plus a valid signature).
 */
export function deriveAuthorityClass(kind: MessageKind, verifiedIntegration = false): AuthorityClass {
  switch (kind) {
    case 'operator_prompt':
      return 'operator_instruction';
    case 'system_tick':
    case 'internal_followup':
    case 'task_result':
    case 'task_status':
    case 'control':
    case 'timer_tick':
      return 'runtime_instruction';
    case 'webhook_event':
    case 'callback_event':
      return verifiedIntegration ? 'integration_signal' : 'external_evidence';
    case 'channel_event':
      return 'external_evidence';
  }
}

/** BullMQ priority per band: lower runs first; FIFO within a band. */
export const PRIORITY_RANK: Record<Priority, number> = { interject: 1, next: 2, normal: 3, background: 4 };

export function bodyText(body: MessageBody): string {
  switch (body.type) {
    case 'text':
      return body.text;
    case 'brief':
      return body.title ? `${body.title}\n\n${body.text}` : body.text;
    case 'json':
      return JSON.stringify(body.value);
  }
}
