import {
  parseOperatorTenantSettings,
  parseMemorySettings,
  parseSessionOverrides,
  parseTenantSettings,
  ResponseFormat,
  ToolChoice,
  ToolSelection,
  type Budgets,
} from '@switchboard/contracts';
import {
  DEFAULT_BUDGET,
  DEFAULT_EMBEDDER,
  killSwitchHook,
  tenantSpendHook,
  UNTRUSTED_AUTHORITY,
  utcDate,
  type StopHook,
  type TurnInput,
} from '@switchboard/engine';
import {
  contextWindow,
  effectiveModels,
  resolveModelRef,
  takesImages,
  type PriceOverrides,
} from '@switchboard/providers';
import type { AgentRow, TurnLoad } from '@switchboard/store';
import { resolveCompression, TOKENJUICE_RETRIEVE_TOOL, withRetrieveTool } from '@switchboard/tokenjuice';
import { buildHistory, parseCompaction } from './history';
import { renderLearning } from './learning-context';
import { parentBudgetCap } from './parent-budget';
import { promptCacheFor } from './prompt-cache';
import { reactorCap } from './reactor-cap';
import { promptTools, renderSystemPrompt, withMemoryBlocks } from './system-prompt';
import { toChatMessage } from './transcript';

/** How long a client tool call waits for the client's result when the agent does not say (10 min). */
export const DEFAULT_CLIENT_TOOL_TTL_MS = 10 * 60_000;

/** How long an approval waits when neither the tenant nor the deployment says (24 h). */
export const DEFAULT_APPROVAL_TTL_MS = 24 * 3600 * 1000;

/** What a claimed turn is planned with besides its claim: the deployment's settings and tools. */
export interface TurnPlanOptions {
  /** What a `hint:<route>` resolves to when the tenant has no route for it (DEFAULT_MODEL). */
  defaultModel: string;
  contextWindows?: Record<string, number>;
  /** The deployment's prices; the tenant's own win by key. */
  prices?: PriceOverrides;
  /** The deployment's approval wait (APPROVAL_TTL_MS); the tenant's wins. */
  approvalTtlMs?: number;
  /** The tools the agent is offered (`TaskWaits.offered`; its own without sub-agents). */
  offered: string[];
  /** The registry's tool names, in order: the system prompt names those offered. */
  registered: string[];
  /** Now (epoch ms): the deadline's start for a turn that has no start yet. */
  now: number;
}

/** The engine's input without what the run itself provides (stop hooks over its checkpoints, MCP tools). */
export type PlannedInput = Omit<TurnInput, 'stopHooks' | 'extraTools'>;

/** A claimed turn as it will run: the engine's input and what its checkpoints and its wait need. */
export interface TurnPlan {
  input: PlannedInput;
  /** The turn seq of each history message: where a compaction cut falls (history.ts). */
  historySeqs: number[];
  /** Rendered on the session's first turn, stored with its first checkpoint; else undefined. */
  newSystemPrompt?: string;
  /** After the highest position this turn has written (a failed checkpoint may have left a gap). */
  nextPosition: number;
  /** How long the turn's approvals wait (tenant, then deployment, then 24 h). */
  approvalTtlMs: number;
  /** How long its client tool calls wait (the agent's budgets.clientToolTimeoutMs, else 10 min): docs/adr/0047. */
  clientToolTtlMs: number;
}

/**
 * A claim as the engine's input, pure: model routes by hint (the tenant's, then the deployment
 * default) with fallbacks, the system prompt (rendered on the session's first turn, reused byte for
 * byte after), history with the compaction note, budget caps (a triage reactor's, a child's parent
 * budget), approval inputs, prices, the deadline's start and what is spent already.
 */
export function planTurn(load: TurnLoad, o: TurnPlanOptions): TurnPlan {
  const { turn, session, own } = load;
  // A session's own model and instructions (a fork's, docs/adr/0053) stand in for the agent's.
  const agent = effectiveAgent(load);
  const settings = parseTenantSettings(load.tenant.settings);
  const routes = settings.modelRoutes;
  const turnMessages = own.map(toChatMessage);
  // A turn with image input runs on the tenant's vision route when it has one (docs/adr/0059).
  const images = turnMessages.some((m) => m.role === 'user' && (m.images?.length ?? 0) > 0);
  const effective = effectiveModels([agent.model, ...agent.fallbackModels], routes, o.defaultModel, {
    images,
    takesImages,
  });
  const model = effective.model.ref;
  const fallbackModels = effective.fallbackModels.map((r) => r.ref);
  const learning = renderLearning(agent.learning);
  const systemPrompt =
    session.systemPrompt ?? renderSystemPrompt(agent, promptTools(agent, o.offered, o.registered));
  // A compacted session loaded only its first exchange and the turns after the cut.
  const history = buildHistory(load.earlier, parseCompaction(session.compaction));
  // TokenJuice (docs/adr/0033): the agent's setting as this turn's mode.
  const compression = resolveCompression(agent.toolResultCompression, agent.model);
  const tools = withRetrieveTool(o.offered, compression, o.registered);
  const input: PlannedInput = {
    turnId: turn.id,
    tenantId: turn.tenantId,
    sessionId: turn.sessionId,
    agentId: agent.id,
    // The stored prompt stays byte for byte; the memory blocks come last (docs/adr/0051), so an
    // edit re-sends only the prefix from the system prompt on, and a no-op edit changes no byte.
    systemPrompt: withMemoryBlocks(systemPrompt, agent.memoryBlocks),
    history: history.messages,
    turnMessages,
    model,
    fallbackModels,
    tools,
    toolResultCompression: compression,
    blockedTools: settings.blockedTools,
    // The hourly side-effect budgets (docs/adr/0058): the agent's and the operator's for the tenant.
    actionLimits: {
      agent: agent.maxActionsPerHour ?? null,
      tenant: parseOperatorTenantSettings(load.tenant.settings).maxActionsPerHour,
    },
    toolSchemaMode: settings.toolSchemaMode,
    summarizer: {
      model: resolveModelRef('hint:summarization', routes, o.defaultModel).ref,
      consecutiveFailures: session.summarizerFailures,
    },
    // A child turn spends at most what its parent had left at the spawn (docs/adr/0025).
    budget: parentBudgetCap(reactorCap({ ...DEFAULT_BUDGET, ...(agent.budgets as Budgets) }, own), own),
    contextWindowTokens: contextWindow(model, o.contextWindows),
    prices: { ...o.prices, ...settings.modelPrices },
    // Its sub-agents' spend counts against its maxUsd (docs/adr/0025): a parent resuming after a
    // wait sees what its children cost.
    spentUsd: Number(turn.costUsd) + Number(turn.childrenCostUsd ?? 0),
    // The wall-clock deadline counts the turn's runs, not the time it waited for a person.
    startedAt: (turn.startedAt?.getTime() ?? o.now) + load.waitedMs,
    startedCalls: load.startedCalls,
    // Approval policy inputs and stored decisions (docs/adr/0013). Untrusted content that triggered
    // the turn (its input, or a user message delivered into it) cannot authorise a side effect by
    // itself; tool output is not counted.
    approval: {
      agent: agent.approvalRequired,
      tenant: settings.approvalRequired,
      untrustedInput: own.some(
        (m) => m.role === 'user' && (UNTRUSTED_AUTHORITY as readonly string[]).includes(m.authorityClass),
      ),
    },
    decisions: load.decisions.flatMap((d) =>
      d.kind === 'client_tool' || d.status === 'answered' ? [] : [{ ...d, status: d.status }],
    ),
    // The client's tools and its answers (docs/adr/0047).
    ...(turn.clientTools ? { clientTools: turn.clientTools } : {}),
    ...toolChoiceOf(turn.toolChoice),
    clientResults: load.decisions.flatMap((d) =>
      d.kind === 'client_tool'
        ? [{ callId: d.callId, status: d.status as 'answered', output: d.output ?? null }]
        : [],
    ),
    // Seed 001 stage 3 (docs/adr/0059): after the system prompt, the same bytes all of a session's day.
    runtimeMetadata: { ...providerAndModel(model), date: utcDate(o.now) },
    ...(learning ? { learning } : {}),
    ...(agent.hasMemory === undefined ? {} : { agentHasMemory: agent.hasMemory }),
    ...(agent.claimedMemory ? { claimedMemory: agent.claimedMemory } : {}),
    // Seed 001 stage 6.1 (docs/adr/0060): opt-in citations after the final answer.
    ...(parseMemorySettings(agent.memory).citations ? { citations: true } : {}),
    ...(agent.hasWorkItems === undefined ? {} : { agentHasWorkItems: agent.hasWorkItems }),
    promptCache: promptCacheFor(load, o.offered, settings.approvalRequired),
    ...toolSelectionOf(agent.toolSelection, agent.embedder, tools),
    ...responseFormatOf(turn.responseFormat),
    // A replay turn (docs/adr/0054): the original's recorded side effects answer its matching calls.
    ...(load.replay ? { replay: load.replay } : {}),
  };
  return {
    input,
    historySeqs: history.seqs,
    newSystemPrompt: session.systemPrompt === null ? systemPrompt : undefined,
    nextPosition: own.length > 0 ? own[own.length - 1].position + 1 : 0,
    approvalTtlMs: settings.approvalTtlMs ?? o.approvalTtlMs ?? DEFAULT_APPROVAL_TTL_MS,
    clientToolTtlMs: (agent.budgets as Budgets).clientToolTimeoutMs ?? DEFAULT_CLIENT_TOOL_TTL_MS,
  };
}

/** `<provider>/<model>` split for the runtime metadata; a reference without a provider is all model. */
function providerAndModel(ref: string): { provider: string; model: string } {
  const slash = ref.indexOf('/');
  return slash <= 0
    ? { provider: 'unknown', model: ref }
    : { provider: ref.slice(0, slash), model: ref.slice(slash + 1) };
}

/**
 * The agent as the session runs it (docs/adr/0053): the session's overrides over the agent's settings.
 * A model override replaces the agent's model and its fallbacks (a fork that tries another model must
 * not quietly answer with the agent's); instructions override the agent's in the system prompt the
 * session renders on its first turn. Stored overrides that no longer parse are ignored.
 */
export function effectiveAgent(load: Pick<TurnLoad, 'agent' | 'session'>): AgentRow {
  const overrides = parseSessionOverrides(load.session.overrides);
  if (overrides.model === undefined && overrides.instructions === undefined) return load.agent;
  return {
    ...load.agent,
    ...(overrides.model !== undefined ? { model: overrides.model, fallbackModels: [] } : {}),
    ...(overrides.instructions !== undefined ? { instructions: overrides.instructions } : {}),
  };
}

/**
 * The structured output the turn was admitted with (docs/adr/0048). It was checked at admission; a
 * stored value this version cannot read (written by a newer one) is not guessed at: the turn runs as
 * text rather than fail on a format it cannot enforce.
 */
function toolChoiceOf(stored: unknown): Pick<PlannedInput, 'toolChoice'> {
  if (stored == null) return {};
  const parsed = ToolChoice.safeParse(stored);
  return parsed.success ? { toolChoice: parsed.data } : {};
}

function responseFormatOf(stored: unknown): Pick<PlannedInput, 'responseFormat'> {
  if (stored == null) return {};
  const parsed = ResponseFormat.safeParse(stored);
  return parsed.success ? { responseFormat: parsed.data } : {};
}

/**
 * The stop hooks a turn checks before each model call: the tenant's kill switch and daily spend cap
 * (docs/adr/0026) as its latest checkpoint read them, then the deployment's own. The engine's
 * spentUsd includes the children's cost at claim, which the tenant's spend also holds.
 */
export function turnStopHooks(
  signals: { killSwitch(): Promise<boolean>; readonly tenantCapUsd: number | undefined },
  childrenUsd: number,
  custom: StopHook[] = [],
): StopHook[] {
  return [
    killSwitchHook(() => signals.killSwitch()),
    tenantSpendHook(() =>
      signals.tenantCapUsd === undefined ? undefined : signals.tenantCapUsd + childrenUsd,
    ),
    ...custom,
  ];
}

/**
 * The agent's semantic tool selection as the engine runs it (docs/adr/0049): only with a
 * `maxPerTurn`; its embedder, or the built-in default. TokenJuice's retrieve tool, when the turn
 * has it, is pinned on top of `maxPerTurn` (a compacted result names it; it takes no agent's slot).
 * A stored value that no longer parses is ignored (every tool offered), never a failed turn.
 */
export function toolSelectionOf(
  stored: unknown,
  embedder: string | null | undefined,
  tools: readonly string[],
): Pick<PlannedInput, 'toolSelection'> {
  const parsed = ToolSelection.safeParse(stored ?? {});
  if (!parsed.success || parsed.data.maxPerTurn === undefined) return {};
  const pinned = parsed.data.pinned ?? [];
  const retrieve = tools.includes(TOKENJUICE_RETRIEVE_TOOL) && !pinned.includes(TOKENJUICE_RETRIEVE_TOOL);
  return {
    toolSelection: {
      maxPerTurn: parsed.data.maxPerTurn + (retrieve ? 1 : 0),
      pinned: retrieve ? [...pinned, TOKENJUICE_RETRIEVE_TOOL] : pinned,
      embedder: embedder ?? DEFAULT_EMBEDDER,
    },
  };
}
