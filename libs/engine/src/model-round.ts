import {
  cacheSavingsUsd,
  costOf,
  ProviderError,
  tracedComplete,
  type ChatMessage,
  type ModelResponse,
  type ResolvedModel,
  type ToolSpec,
} from '@switchboard/providers';
import { classifyAttempt, type AttemptNext, type AttemptVerdict } from './provider-attempts';
import type { TurnRun } from './run/turn-run';
import type { ContextSource } from './context';
import type { FailureArtifact, ProviderAttempt, RoundContext, TurnInput } from './types';

/** What a turn's GenAI spans carry besides the model (the conversation is the session). */
export const genAiAttributes = (input: TurnInput): Record<string, string> => ({
  'gen_ai.conversation.id': input.sessionId,
  'switchboard.tenant.id': input.tenantId,
  ...(input.agentId ? { 'gen_ai.agent.id': input.agentId } : {}),
});

/** A round's result: the model's response and its cost, or the failure that ends the turn. */
export type RoundResult = { response: ModelResponse; costUsd: number } | { failure: FailureArtifact };

/**
 * One model round (seed 002 "Provider Transport Contract") of the run, on the `messages` assembled
 * for it: the turn's model, then each fallback model, each tried until `classifyAttempt` says what
 * its failure means (retry it, move to the next model, stop, or end the turn). Every attempt lands on
 * the timeline with its outcome, timing, backoff, usage and transport diagnostics.
 */
export async function modelRound(
  run: TurnRun,
  messages: ChatMessage[],
  sources?: ContextSource[],
  opts: { noToolCalls?: boolean } = {},
): Promise<RoundResult> {
  const { input, cp } = run;
  const models = [input.model, ...input.fallbackModels];
  const round: Round = {
    run,
    messages,
    tools: run.offeredToolSpecs(),
    attempts: [],
    noToolCalls: opts.noToolCalls ?? false,
  };
  // What the round sends, recorded with it (docs/adr/0045): the arrays are the ones the provider gets.
  const context: RoundContext | undefined = sources
    ? { round: run.rounds, messages, sources, tools: round.tools }
    : undefined;
  let lastError: ProviderError | undefined;
  await cp.emit('provider_round_started', { round: run.rounds, model: input.model });
  for (const [index, ref] of models.entries()) {
    const tried = await tryModel(round, ref, index < models.length - 1);
    if ('response' in tried) return succeeded(run, tried, round.attempts, context);
    lastError = tried.error;
    if (tried.next === 'end_turn') {
      await cp.recordFailedAttempts(round.attempts, context);
      return { failure: contextLengthExceeded(ref, tried.error, round.attempts) };
    }
    if (tried.next === 'stop') break;
  }
  await cp.recordFailedAttempts(round.attempts, context);
  return { failure: providerFailure(models, round.attempts, lastError) };
}

/** A round in progress: the run, the messages sent, and its attempts so far (the timeline). */
interface Round {
  run: TurnRun;
  messages: ChatMessage[];
  /** The tools this round offers (all the turn's, or its semantic selection: tool-selection.ts). */
  tools: ToolSpec[];
  attempts: ProviderAttempt[];
  /**
   * The tools are described (the transcript's calls stay valid) but none may be called: the
   * summarising call at the model-call cap (docs/adr/0058).
   */
  noToolCalls: boolean;
}

/** A model that answered. */
interface Served {
  response: ModelResponse;
  ref: string;
  provider: string;
  model: string;
}

/** A model's last failed attempt: its error and what the round does next. */
interface Failed {
  error: ProviderError;
  next: AttemptNext;
  backoffMs?: number;
}

/** One model's attempts in the round, each failure classified and on the timeline. */
async function tryModel(round: Round, ref: string, hasNextModel: boolean): Promise<Served | Failed> {
  const { run, attempts } = round;
  const { retry, providers } = run.resources;
  const maxAttempts = retry.maxRetries + 1;
  const fail = (error: ProviderError, at: AttemptAt): Failed => {
    const verdict = classifyAttempt(error, {
      stage: at.stage ?? 'call',
      attempt: at.attempt,
      maxAttempts,
      hasNextModel,
      aborted: run.signal.aborted,
      maxBackoffMs: retry.maxBackoffMs,
    });
    attempts.push(failedAttempt(at, error, verdict));
    return { error, next: verdict.next, backoffMs: verdict.backoffMs };
  };
  let resolved: ResolvedModel;
  try {
    resolved = providers.resolve(ref);
  } catch (err) {
    // ProviderRegistry.resolve throws a ProviderError (`bad_request`: no provider for the model).
    const at = {
      round: run.rounds,
      ref,
      attempt: 1,
      maxAttempts,
      started: Date.now(),
      stage: 'resolve' as const,
    };
    return fail(err as ProviderError, at);
  }
  for (let attempt = 1; ; attempt++) {
    const at = { round: run.rounds, ref, attempt, maxAttempts, started: Date.now() };
    try {
      const answered = await complete(run, resolved, round);
      // A model that calls a tool where none may be called is not obeyed: its calls are dropped.
      const response = round.noToolCalls ? { ...answered, toolCalls: [] } : answered;
      const provider = resolved.provider.name;
      attempts.push({
        ...timing(at),
        provider,
        outcome: 'succeeded',
        advancedToFallback: false,
        usage: response.usage,
      });
      return { response, ref, provider, model: resolved.model };
    } catch (err) {
      const failed = fail(
        err instanceof ProviderError ? err : new ProviderError('invalid_response', String(err)),
        at,
      );
      if (failed.next !== 'retry') return failed;
      await retry.sleep(failed.backoffMs ?? 0, run.signal);
      if (run.signal.aborted) return { ...failed, next: 'stop' };
    }
  }
}

/** One provider call of the round, streaming its text to the checkpoints. */
function complete(run: TurnRun, resolved: ResolvedModel, round: Round): Promise<ModelResponse> {
  const { input, cp, signal } = run;
  const { messages, tools } = round;
  return tracedComplete(
    resolved,
    {
      messages,
      tools,
      signal,
      onTextDelta: (d) => cp.textDelta(d),
      ...(input.promptCache ? { cache: input.promptCache } : {}),
      ...(input.responseFormat ? { responseFormat: input.responseFormat } : {}),
      // Forced for the first round only: after a tool result the model must be free to answer.
      ...(round.noToolCalls
        ? { toolChoice: { type: 'none' as const } }
        : input.toolChoice && !run.messages.some((m) => m.role === 'assistant')
          ? { toolChoice: input.toolChoice }
          : {}),
    },
    genAiAttributes(input),
  );
}

/**
 * The round a model answered: priced, journaled and recorded. Persistence failures (a lost lease, a
 * dead database) are not provider failures: they propagate.
 */
async function succeeded(
  run: TurnRun,
  served: Served,
  attempts: ProviderAttempt[],
  context?: RoundContext,
): Promise<RoundResult> {
  const { input, cp } = run;
  const { response, ref, provider, model } = served;
  const round = run.rounds;
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
    ...(context ? { context } : {}),
  });
  return { response, costUsd: cost.usd };
}

/** The conversation no longer fits `ref`'s context window: the turn ends, whatever models are left. */
function contextLengthExceeded(ref: string, e: ProviderError, attempts: ProviderAttempt[]): FailureArtifact {
  return {
    kind: 'context_length_exceeded',
    category: 'runtime',
    message: e.message,
    ...lastErrorFields(e),
    model: ref,
    attempts,
    brief: `The conversation no longer fits the context window of ${ref}. Start a new session or shorten the input.`,
  };
}

/** Every model failed, or the turn stopped: the aggregated provider failure (seed 002). */
function providerFailure(
  models: string[],
  attempts: ProviderAttempt[],
  lastError?: ProviderError,
): FailureArtifact {
  return {
    kind: 'provider_error',
    category: lastError ? categoryOf(lastError) : 'unknown',
    message: lastError?.message ?? 'no model could be called',
    ...(lastError ? lastErrorFields(lastError) : {}),
    model: models[models.length - 1],
    attempts,
    brief: aggregatedFailure(models, attempts, lastError),
  };
}

interface AttemptAt {
  round: number;
  ref: string;
  attempt: number;
  maxAttempts: number;
  started: number;
  /** The model reference resolved to no provider: the attempt never reached one. */
  stage?: 'resolve';
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

/** A failed attempt on the timeline, with its verdict and transport diagnostics (seed 002). */
function failedAttempt(at: AttemptAt, e: ProviderError, verdict: AttemptVerdict): ProviderAttempt {
  return {
    ...timing(at),
    ...(e.details.provider ? { provider: e.details.provider } : {}),
    outcome: verdict.outcome,
    disposition: verdict.disposition,
    advancedToFallback: verdict.advancedToFallback,
    ...(verdict.backoffMs === undefined ? {} : { backoffMs: verdict.backoffMs }),
    failureKind: e.kind,
    status: e.details.status,
    message: e.message.slice(0, 500),
    ...(e.details.requestId ? { requestId: e.details.requestId } : {}),
    transportDiagnostics: e.details.diagnostics ?? {
      stage: at.stage ?? (e.kind === 'invalid_response' ? 'decode' : 'stream'),
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
