import { z } from 'zod';

/**
 * Triggers: external trigger capabilities (seed 002 "External Trigger Capabilities", SPEC §10,
 * docs/adr/0019). A trigger is a URL with an unguessable token that an external system posts
 * deliveries to; its scheme says how each delivery's signature is checked.
 */

/**
 * `github`: X-Hub-Signature-256; `slack`: Slack's v0 signature; `standard-webhooks`: the Standard
 * Webhooks headers; `token`: the URL's token only, no signature (deliveries are never verified).
 */
export const TriggerScheme = z.enum(['github', 'slack', 'standard-webhooks', 'token']);
export type TriggerScheme = z.infer<typeof TriggerScheme>;

/** `enqueue_message`: a delivery is triaged into a turn; `wake_hint`: it only nudges the agent (seed 002 "Wake Hints"). */
export const TriggerDeliveryMode = z.enum(['enqueue_message', 'wake_hint']);
export type TriggerDeliveryMode = z.infer<typeof TriggerDeliveryMode>;

/** Slack generates its app's signing secret: the tenant copies it from the app's settings. */
const SlackSigningSecret = z
  .string()
  .regex(/^[A-Za-z0-9]{16,128}$/, { message: 'must be 16 to 128 letters or digits' });

/**
 * Triage rules, checked in full by the gateway against libs/triage's schema (the one triage
 * reads); here only their outer shape.
 */
const TriggerRules = z.array(z.record(z.string(), z.unknown())).max(100);

export const CreateTriggerRequest = z
  .strictObject({
    agentId: z.uuid(),
    name: z.string().trim().min(1).max(120),
    scheme: TriggerScheme,
    deliveryMode: TriggerDeliveryMode.default('enqueue_message'),
    /** A session of the same agent every delivery is admitted into; without one each delivery gets its own. */
    sessionId: z.uuid().optional(),
    rules: TriggerRules.default([]),
    /** Required for `slack` (Slack's signing secret), refused otherwise: we generate the others' secrets. */
    signingSecret: SlackSigningSecret.optional(),
  })
  .refine((v) => (v.scheme === 'slack') === (v.signingSecret !== undefined), {
    message: 'signingSecret is required for the slack scheme and refused for the others',
    path: ['signingSecret'],
  });
export type CreateTriggerRequest = z.infer<typeof CreateTriggerRequest>;

/** How long the previous secret stays valid after a rotation, at most 7 days. */
export const MAX_ROTATION_GRACE_S = 7 * 24 * 3600;

export const RotateTriggerRequest = z.strictObject({
  /**
   * Seconds the previous secret keeps verifying. Default: 24 h for `standard-webhooks` (a sender
   * signs with both secrets while it migrates), 0 for the others (a rotation is usually a leak).
   */
  graceSeconds: z.int().min(0).max(MAX_ROTATION_GRACE_S).optional(),
  /** `slack` only, and required there: the new signing secret Slack generated. */
  signingSecret: SlackSigningSecret.optional(),
});
export type RotateTriggerRequest = z.infer<typeof RotateTriggerRequest>;

/** The default grace of a rotation by scheme (docs/adr/0019). */
export function defaultRotationGraceSeconds(scheme: TriggerScheme): number {
  return scheme === 'standard-webhooks' ? 24 * 3600 : 0;
}
