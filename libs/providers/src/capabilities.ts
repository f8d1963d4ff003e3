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

/** Whether the model a `provider/model` reference names takes image input. */
export function takesImages(ref: string): boolean {
  const slash = ref.indexOf('/');
  if (slash <= 0) return false;
  const textOnly = TEXT_ONLY[ref.slice(0, slash)];
  return textOnly !== undefined && !textOnly.test(ref.slice(slash + 1));
}
