import { z } from 'zod';

/**
 * A turn's forced tool choice (docs/adr/0047), protocol- and provider-neutral: `required` (the model
 * must call some tool) or `tool` (it must call the one named). Absent: the model decides (`auto`).
 * It applies to the turn's first model round only: after a tool result the model is free to answer,
 * as OpenAI's own tool loops expect (the helpers send it once), or the loop would never end.
 */
export const ToolChoice = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('required') }),
  z.strictObject({ type: z.literal('tool'), name: z.string().min(1).max(64) }),
]);
export type ToolChoice = z.infer<typeof ToolChoice>;
