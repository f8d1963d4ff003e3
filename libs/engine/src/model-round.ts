import {
  cacheSavingsUsd,
  costOf,
  ProviderError,
  tracedComplete,
  type ChatMessage,
  type ModelResponse,
  type ProviderRegistry,
  type ToolSpec,
  type TransportDiagnostics,
} from '@switchboard/providers';
import type { FailureArtifact, ProviderAttempt, TurnCheckpoints, TurnInput } from './types';

export interface ModelRoundOptions {
  providers: ProviderRegistry;
  /** Retries on the same model for retryable failures (seed 002: 2). */
  maxRetries: number;
  /** Upper bound for a single backoff, whatever retry-after says. */
  maxBackoffMs: number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * One provider round (seed 002 "Provider Transport Contract"): retry on the same
 * model for retryable failures, then fall back to the next configured model;
 * every attempt lands on the timeline with its outcome, timing, backoff, usage
 * and transport diagnostics.
 */
/** What a turn's GenAI spans carry besides the model (the conversation is the session). */
export const genAiAttributes = (input: TurnInput): Record<string, string> => ({
  'gen_ai.conversation.id': input.sessionId,
  'switchboard.tenant.id': input.tenantId,
  ...(input.agentId ? { 'gen_ai.agent.id': input.agentId } : {}),
});

export class ModelRound {
  constructor(private readonly o: ModelRoundOptions) {}

  /** One provider round with retry on the same model, then fallback to the next (seed 002). */
  async call(
    input: TurnInput,
    round: number,
    messages: ChatMessage[],
    tools: ToolSpec[],
    cp: TurnCheckpoints,
    signal: AbortSignal,
  ): Promise<{ response: ModelResponse; costUsd: number } | { failure: FailureArtifact }> {
    const attempts: ProviderAttempt[] = [];
    const models = [input.model, ...input.fallbackModels];
    let lastError: ProviderError | undefined;
    let succeeded: { response: ModelResponse; ref: string; provider: string; model: string } | undefined;
    await cp.emit('provider_round_started', { round, model: input.model });

    const maxAttempts = this.o.maxRetries + 1;
    for (const [index, ref] of models.entries()) {
      const hasNext = index < models.length - 1;
      let resolved;
      try {
        resolved = this.o.providers.resolve(ref);
      } catch (err) {
        lastError = err as ProviderError;
        attempts.push(
          failedAttempt({ round, ref, attempt: 1, maxAttempts, started: Date.now() }, lastError, {
            outcome: 'fail_fast_aborted',
            disposition: 'fail_fast',
            advancedToFallback: hasNext,
            stage: 'resolve',
          }),
        );
        continue;
      }
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        const started = Date.now();
        const at = { round, ref, attempt, maxAttempts, started };
        try {
          const response = await tracedComplete(
            resolved,
            {
              messages,
              tools,
              signal,
              onTextDelta: (d) => cp.textDelta(d),
              ...(input.promptCache ? { cache: input.promptCache } : {}),
            },
            genAiAttributes(input),
          );
          attempts.push({
            ...timing(at),
            provider: resolved.provider.name,
            outcome: 'succeeded',
            advancedToFallback: false,
            usage: response.usage,
          });
          succeeded = { response, ref, provider: resolved.provider.name, model: resolved.model };
          break;
        } catch (err) {
          const pe = err instanceof ProviderError ? err : new ProviderError('invalid_response', String(err));
          lastError = pe;
          if (signal.aborted || pe.kind === 'cancelled') {
            attempts.push(
              failedAttempt(at, pe, {
                outcome: 'fail_fast_aborted',
                disposition: 'cancelled',
                advancedToFallback: false,
              }),
            );
            break;
          }
          if (pe.kind === 'context_length') {
            // Ends the turn: another model would only hide that the conversation is too long.
            attempts.push(
              failedAttempt(at, pe, {
                outcome: 'fail_fast_aborted',
                disposition: 'terminal',
                advancedToFallback: false,
              }),
            );
            await cp.recordFailedAttempts(attempts);
            return {
              failure: {
                kind: 'context_length_exceeded',
                category: 'runtime',
                message: pe.message,
                ...lastErrorFields(pe),
                model: ref,
                attempts,
                brief: `The conversation no longer fits the context window of ${ref}. Start a new session or shorten the input.`,
              },
            };
          }
          if (!pe.retryable) {
            attempts.push(
              failedAttempt(at, pe, {
                outcome: 'fail_fast_aborted',
                disposition: 'fail_fast',
                advancedToFallback: hasNext,
              }),
            );
            break;
          }
          if (attempt === maxAttempts) {
            attempts.push(
              failedAttempt(at, pe, {
                outcome: 'retries_exhausted',
                disposition: 'retryable',
                advancedToFallback: hasNext,
              }),
            );
            break;
          }
          const backoffMs = Math.min(
            this.o.maxBackoffMs,
            pe.details.retryAfterMs ?? 500 * 2 ** (attempt - 1),
          );
          attempts.push(
            failedAttempt(at, pe, {
              outcome: 'retrying',
              disposition: 'retryable',
              advancedToFallback: false,
              backoffMs,
            }),
          );
          await this.o.sleep(backoffMs, signal);
          if (signal.aborted) break;
        }
      }
      if (succeeded || signal.aborted) break;
    }
    if (succeeded) {
      // Persistence failures (a lost lease, a dead database) are not provider failures: they propagate.
      const { response, ref, provider, model } = succeeded;
      const cost = costOf(provider, model, response.usage, response.reportedCostUsd, input.prices);
      const cacheSavedUsd = cacheSavingsUsd(provider, model, response.usage, input.prices);
      await cp.emit('provider_round_completed', {
        round,
        model: ref,
        requestedModel: input.model,
        usage: response.usage,
        costUsd: cost.usd,
        cacheSavedUsd,
        toolCalls: response.toolCalls.length,
        attempts,
      });
      await cp.recordRound({
        round,
        model: ref,
        provider,
        response,
        costUsd: cost.usd,
        costSource: cost.source,
        cacheSavedUsd,
        attempts,
      });
      return { response, costUsd: cost.usd };
    }
    await cp.recordFailedAttempts(attempts);
    return {
      failure: {
        kind: 'provider_error',
        category: lastError ? categoryOf(lastError) : 'unknown',
        message: lastError?.message ?? 'no model could be called',
        ...(lastError ? lastErrorFields(lastError) : {}),
        model: models[models.length - 1],
        attempts,
        brief: aggregatedFailure(models, attempts, lastError),
      },
    };
  }
}

interface AttemptAt {
  round: number;
  ref: string;
  attempt: number;
  maxAttempts: number;
  started: number;
}

function timing(at: AttemptAt) {
  const now = Date.now();
  return {
    round: at.round,
    model: at.ref,
    attempt: at.attempt,
    maxAttempts: at.maxAttempts,
    startedAt: new Date(at.started).toISOString(),
    completedAt: new Date(now).toISOString(),
    durationMs: now - at.started,
  };
}

/** A failed attempt on the timeline, with its transport diagnostics (seed 002). */
function failedAttempt(
  at: AttemptAt,
  e: ProviderError,
  how: Pick<ProviderAttempt, 'outcome' | 'disposition' | 'advancedToFallback' | 'backoffMs'> & {
    stage?: TransportDiagnostics['stage'];
  },
): ProviderAttempt {
  const { stage, ...rest } = how;
  return {
    ...timing(at),
    ...(e.details.provider ? { provider: e.details.provider } : {}),
    ...rest,
    failureKind: e.kind,
    status: e.details.status,
    message: e.message.slice(0, 500),
    ...(e.details.requestId ? { requestId: e.details.requestId } : {}),
    transportDiagnostics: e.details.diagnostics ?? {
      stage: stage ?? (e.kind === 'invalid_response' ? 'decode' : 'stream'),
      ...(e.details.provider ? { provider: e.details.provider } : {}),
      sourceChain: [`ProviderError: ${e.message.slice(0, 300)}`],
    },
  };
}

/**
 * The aggregated provider failure (seed 002): each model's story in one line, so
 * retry exhaustion on one model is visible even when another failed last.
 */
function aggregatedFailure(models: string[], attempts: ProviderAttempt[], last?: ProviderError): string {
  const perModel = models.map((m) => {
    const own = attempts.filter((a) => a.model === m);
    const final = own[own.length - 1];
    if (!final) return `${m}: not tried`;
    const how = final.outcome === 'retries_exhausted' ? 'retries exhausted' : 'failed fast';
    return `${m}: ${how} after ${own.length} attempt${own.length === 1 ? '' : 's'} (${final.failureKind}${
      final.status ? `, HTTP ${final.status}` : ''
    })`;
  });
  return `Every configured model failed — ${perModel.join('; ')}. Last error: ${last?.kind ?? 'unknown'}: ${
    last?.message ?? ''
  }`;
}

/** Seed 002's provenance of a provider failure: the transport, or the contract / response shape. */
function categoryOf(e: ProviderError): FailureArtifact['category'] {
  switch (e.kind) {
    case 'invalid_response':
    case 'bad_request':
      return 'protocol';
    case 'context_length':
    case 'cancelled':
      return 'runtime';
    case 'auth':
    case 'connection':
    case 'rate_limited':
    case 'server':
    case 'timeout':
      return 'transport';
  }
}

function lastErrorFields(e: ProviderError): Partial<FailureArtifact> {
  return {
    failureKind: e.kind,
    ...(e.details.provider ? { provider: e.details.provider } : {}),
    ...(e.details.status ? { status: e.details.status } : {}),
    sourceChain: e.details.diagnostics?.sourceChain ?? [`ProviderError: ${e.message.slice(0, 300)}`],
  };
}
