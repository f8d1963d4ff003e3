import type { Config } from '@switchboard/config';
import { loadFixtureDir, ProviderRegistry } from '@switchboard/providers';

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
