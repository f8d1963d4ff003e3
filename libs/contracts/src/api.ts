import { z } from 'zod';
import { Priority } from './envelope';

/** Request bodies and queries of the HTTP API. Objects are strict: unknown fields are rejected. */

export const ModelRef = z.string().regex(/^(openai|openai-chat|anthropic|scripted)\/[A-Za-z0-9._:@-]+$/, {
  message: 'must be "<provider>/<model>" with provider openai, openai-chat, anthropic or scripted',
});

export const Budgets = z.strictObject({
  maxIterations: z.int().min(1).max(100).optional(),
  maxToolCalls: z.int().min(1).max(1000).optional(),
  maxUsd: z.number().positive().max(1000).optional(),
  deadlineMs: z.int().min(1000).max(3_600_000).optional(),
  maxReflections: z.int().min(0).max(10).optional(),
});
export type Budgets = z.infer<typeof Budgets>;

export const Tier = z.enum(['chat', 'reasoning', 'worker']);
const Name = z.string().trim().min(1).max(120);

export const CreateTenantRequest = z.strictObject({ name: Name });
export type CreateTenantRequest = z.infer<typeof CreateTenantRequest>;

export const CreateApiKeyRequest = z.strictObject({ name: Name.optional() });

export const CreateAgentRequest = z.strictObject({
  name: Name,
  archetype: z.string().trim().min(1).max(60).optional(),
  tier: Tier.optional(),
  instructions: z.string().max(100_000).optional(),
  model: ModelRef.optional(),
  fallbackModels: z.array(ModelRef).max(5).optional(),
  tools: z.array(z.string().min(1).max(120)).max(100).optional(),
  allowedSubagents: z.array(z.string().min(1).max(120)).max(50).optional(),
  budgets: Budgets.optional(),
});
export type CreateAgentRequest = z.infer<typeof CreateAgentRequest>;

export const UpdateAgentRequest = CreateAgentRequest.partial().refine((v) => Object.keys(v).length > 0, {
  message: 'at least one field is required',
});
export type UpdateAgentRequest = z.infer<typeof UpdateAgentRequest>;

export const CreateSessionRequest = z.strictObject({
  agentId: z.string().min(1).max(100),
  title: z.string().max(200).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type CreateSessionRequest = z.infer<typeof CreateSessionRequest>;

export const ContentBlock = z.strictObject({ type: z.literal('text'), text: z.string().min(1).max(200_000) });

export const AdmitMessageRequest = z.strictObject({
  content: z.union([z.string().min(1).max(200_000), z.array(ContentBlock).min(1).max(50)]),
  priority: Priority.optional(),
  /** enqueue (default): run after the session's earlier messages; reject: 409 while a turn is queued or running. */
  multitask: z.enum(['enqueue', 'reject']).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  correlationId: z.string().min(1).max(200).optional(),
});
export type AdmitMessageRequest = z.infer<typeof AdmitMessageRequest>;

export const PageQuery = z.strictObject({
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(200).optional(),
});
export type PageQuery = z.infer<typeof PageQuery>;

export const EventsQuery = z.strictObject({
  after: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

export const IdempotencyKey = z.string().min(1).max(200);
