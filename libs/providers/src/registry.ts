import { AnthropicProvider } from './anthropic';
import { OpenAIChatProvider } from './openai-chat';
import { OpenAIResponsesProvider } from './openai-responses';
import { ScriptedProvider, type ScriptedFixture } from './scripted';
import type { StreamTimeouts } from './stream-guard';
import { ProviderError, type ModelProvider } from './types';

export interface ProviderSettings {
  openaiApiKey?: string;
  openaiBaseUrl?: string;
  anthropicApiKey?: string;
  anthropicBaseUrl?: string;
  /** Wait for response headers, per attempt, for the SDK providers. */
  timeoutMs?: number;
  /** Silence between stream chunks, and the whole attempt, for the SDK providers. */
  streamTimeouts?: Partial<StreamTimeouts>;
  scriptedFixtures?: ScriptedFixture[];
}

export interface ResolvedModel {
  provider: ModelProvider;
  /** Model name without the provider prefix. */
  model: string;
  ref: string;
}

/** Resolves `provider/model` references to provider instances (SPEC §14). */
export class ProviderRegistry {
  private readonly providers = new Map<string, ModelProvider>();

  constructor(settings: ProviderSettings = {}, extra: ModelProvider[] = []) {
    this.register(new ScriptedProvider(settings.scriptedFixtures));
    const { timeoutMs, streamTimeouts } = settings;
    this.register(
      new OpenAIChatProvider({
        apiKey: settings.openaiApiKey,
        baseURL: settings.openaiBaseUrl,
        timeoutMs,
        streamTimeouts,
      }),
    );
    this.register(
      new OpenAIResponsesProvider({
        apiKey: settings.openaiApiKey,
        baseURL: settings.openaiBaseUrl,
        timeoutMs,
        streamTimeouts,
      }),
    );
    this.register(
      new AnthropicProvider({
        apiKey: settings.anthropicApiKey,
        baseURL: settings.anthropicBaseUrl,
        timeoutMs,
        streamTimeouts,
      }),
    );
    for (const p of extra) this.register(p);
  }

  register(provider: ModelProvider): void {
    this.providers.set(provider.name, provider);
  }

  resolve(ref: string): ResolvedModel {
    const slash = ref.indexOf('/');
    const name = slash > 0 ? ref.slice(0, slash) : '';
    const model = ref.slice(slash + 1);
    const provider = this.providers.get(name);
    if (!provider || !model) {
      throw new ProviderError('bad_request', `no provider for model "${ref}"`);
    }
    return { provider, model, ref };
  }
}
