import { z } from 'zod';

/** Named model routes an agent can ask for with `hint:<route>`; each tenant maps them to concrete models. */
export const MODEL_ROUTES = [
  'chat',
  'reasoning',
  'agentic',
  'coding',
  'burst',
  'summarization',
  /** The model a turn with image input runs on (docs/adr/0059); it must take images. */
  'vision',
  /** The LLM judges' model (`hint:evaluation`, docs/adr/0062): a scorer's default. */
  'evaluation',
] as const;
export const ModelRoute = z.enum(MODEL_ROUTES);
export type ModelRoute = z.infer<typeof ModelRoute>;
/** `hint:<route>` names a route instead of a model. */
export const MODEL_HINT_PREFIX = 'hint:';

export const CONCRETE_MODEL_REF = '(openai|openai-chat|anthropic|scripted)/[A-Za-z0-9._:@-]+';
const MODEL_HINT = `hint:(${MODEL_ROUTES.join('|')})`;

/** A concrete `<provider>/<model>` reference: what a tenant's route points at. */
export const ConcreteModelRef = z.string().regex(new RegExp(`^${CONCRETE_MODEL_REF}$`), {
  message:
    'must be "<provider>/<model>" with provider openai, openai-chat, anthropic or scripted (not a "hint:<route>")',
});

/** What an agent names as its model: a concrete reference or `hint:<route>`, resolved per tenant at run time. */
export const ModelRef = z.string().regex(new RegExp(`^(${CONCRETE_MODEL_REF}|${MODEL_HINT})$`), {
  message:
    'must be "<provider>/<model>" with provider openai, openai-chat, anthropic or scripted, ' +
    'or "hint:<route>" with route chat, reasoning, agentic, coding, burst, summarization, vision or evaluation',
});
