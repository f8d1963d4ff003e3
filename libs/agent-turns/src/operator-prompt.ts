/**
 * What every protocol's message (the OpenAI-compatible facade, Responses, LangGraph, MCP, A2A) is
 * admitted and imported as: an operator's prompt over the public API (docs/adr/0016).
 */
export const OPERATOR_PROMPT = {
  kind: 'operator_prompt',
  origin: { kind: 'operator' },
  deliverySurface: 'http_public_enqueue',
  admissionContext: 'control_authenticated',
} as const;
