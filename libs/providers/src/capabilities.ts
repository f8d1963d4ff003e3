/**
 * What a model reference can take beyond text (docs/adr/0035). Images: the OpenAI (Responses, Chat
 * Completions) and Anthropic adapters carry image parts, and every current model of those families
 * reads them, except the text-only ones named here; the scripted provider and a `hint:<route>` (its
 * model is decided per tenant and turn) are text only. A deployment pointing `openai-chat` at a
 * text-only compatible server gets the provider's own 400 on an image, a failed turn.
 */
const TEXT_ONLY: Record<string, RegExp> = {
  openai: /^(gpt-3\.5|gpt-4-(0314|0613|32k)|o1-mini|o3-mini|text-|davinci|babbage|ft:gpt-3\.5)/,
  'openai-chat': /^(gpt-3\.5|gpt-4-(0314|0613|32k)|o1-mini|o3-mini|text-|davinci|babbage|ft:gpt-3\.5)/,
  anthropic: /^claude-(instant|[12](\.|-|$))/,
};

/** Completion-era models that cannot call tools at all (no function calling). */
const NO_TOOLS: Record<string, RegExp> = {
  openai: /^(text-|davinci|babbage)/,
  'openai-chat': /^(text-|davinci|babbage)/,
  anthropic: /^claude-(instant|[12](\.|-|$))/,
};

/** Models without a native JSON-schema output mode (the engine still validates and repairs, ADR 0048). */
const NO_NATIVE_SCHEMA: Record<string, RegExp> = {
  openai: /^(gpt-3\.5|gpt-4-(0314|0613|32k)|gpt-4-turbo|text-|davinci|babbage|ft:gpt-3\.5)/,
  'openai-chat': /^(gpt-3\.5|gpt-4-(0314|0613|32k)|gpt-4-turbo|text-|davinci|babbage|ft:gpt-3\.5)/,
  anthropic: /^claude-(instant|[123](\.|-|$)|3-)/,
};

/** The capability flags of one model (docs/adr/0059): what a route or a turn may rely on. */
export interface ModelCapabilities {
  /** Takes image parts in user messages. */
  vision: boolean;
  /** Calls tools (function calling). */
  tools: boolean;
  /** Has a native JSON-schema output mode (`response_format` / `text.format` / `output_config`). */
  structuredOutput: boolean;
}

export type ModelCapability = keyof ModelCapabilities;

const NONE: ModelCapabilities = { vision: false, tools: false, structuredOutput: false };

function split(ref: string): [string, string] | undefined {
  const slash = ref.indexOf('/');
  return slash <= 0 ? undefined : [ref.slice(0, slash), ref.slice(slash + 1)];
}

/**
 * The flags of the model a concrete `provider/model` reference names. A `hint:<route>` or an unknown
 * provider has none (its model is not known here); the scripted provider (tests, demos) calls tools
 * and reads text only.
 */
export function modelCapabilities(ref: string): ModelCapabilities {
  const parts = split(ref);
  if (!parts) return NONE;
  const [provider, model] = parts;
  if (provider === 'scripted') return { vision: false, tools: true, structuredOutput: false };
  const textOnly = TEXT_ONLY[provider];
  if (textOnly === undefined) return NONE;
  return {
    vision: !textOnly.test(model),
    tools: !NO_TOOLS[provider].test(model),
    structuredOutput: !NO_NATIVE_SCHEMA[provider].test(model),
  };
}

/** Whether the model a `provider/model` reference names takes image input. */
export function takesImages(ref: string): boolean {
  return modelCapabilities(ref).vision;
}

/**
 * What a route's model must be able to do (docs/adr/0059): the `vision` route serves turns with image
 * input, so its model must take images; the other routes ask for nothing beyond text.
 */
export const ROUTE_REQUIREMENTS: Readonly<Record<string, readonly ModelCapability[]>> = {
  vision: ['vision'],
};
