import type { Config } from '@switchboard/config';
import {
  createEmbedderRegistry,
  loadFixtureDir,
  ProviderRegistry,
  type EmbedderRegistry,
} from '@switchboard/providers';

/**
 * The model providers every process that calls a model uses (the harness's turns, triage, the
 * archivist hook), built one way from the configuration: the same keys, base URLs, timeouts and
 * scripted fixtures, so a model reference resolves alike wherever it is called.
 */
export function providerRegistryFromConfig(config: Config): ProviderRegistry {
  return new ProviderRegistry({
    openaiApiKey: config.OPENAI_API_KEY,
    openaiBaseUrl: config.OPENAI_BASE_URL,
    anthropicApiKey: config.ANTHROPIC_API_KEY,
    anthropicBaseUrl: config.ANTHROPIC_BASE_URL,
    timeoutMs: config.PROVIDER_TIMEOUT_MS,
    streamTimeouts: {
      idleMs: config.PROVIDER_STREAM_IDLE_MS,
      totalMs: config.PROVIDER_ATTEMPT_TIMEOUT_MS,
    },
    scriptedFixtures: config.SCRIPTED_FIXTURES_DIR ? loadFixtureDir(config.SCRIPTED_FIXTURES_DIR) : [],
  });
}

/**
 * The embedders (docs/adr/0049), built one way from the configuration: the built-in `local/*` and
 * `openai/<model>` with the OpenAI key and base URL the chat providers use (so a compatible server —
 * Ollama, vLLM, text-embeddings-inference — serves both) and the same header timeout.
 */
export function embedderRegistryFromConfig(config: Config): EmbedderRegistry {
  return createEmbedderRegistry({
    apiKey: config.OPENAI_API_KEY,
    baseURL: config.OPENAI_BASE_URL,
    timeoutMs: config.PROVIDER_TIMEOUT_MS,
  });
}
