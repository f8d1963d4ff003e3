import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  inputRequired,
  ProtocolError,
  ProtocolErrorCode,
  Server as ModernServer,
  type ClientCapabilities,
  type InputRequiredResult,
  type RequestStateCodec,
  type ServerContext,
  type Tool as ModernTool,
} from '@modelcontextprotocol/server';
import {
  AppError,
  cancelCause,
  ClientToolRefused,
  EventType,
  type TurnResponse,
} from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import {
  agentTools,
  clientToolElicitation,
  clientToolOutput,
  clientToolWaitResult,
  parseToolArguments,
  progressMessage,
  summarise,
  toolError,
  toolResultOf,
  type McpClientToolCall,
} from '@switchboard/protocols';
import type { LiveWatch } from '@switchboard/live';
import { SessionRefused, type AgentTurns, type StartedTurn } from '@switchboard/agent-turns';

/**
 * Switchboard as an MCP server (docs/adr/0036): `/mcp`, Streamable HTTP, stateless. Each of the
 * tenant's agents is a tool; calling it admits a turn (AgentTurns: the seams chat completions uses)
 * and answers with the turn's final text. Two protocol eras on one endpoint, one behaviour: revision
 * 2025-11-25 (`initialize` first) is served by `mcpServerFor` (SDK v1), revision 2026-07-28 (every
 * request carries its version in `_meta`, `server/discover`) by `modernMcpServerFor` (SDK v2); both
 * hand their tools/list and tools/call to `listAgentTools` and `callAgentTool`. Plain TypeScript:
 * the controller picks the era per request.
 */

/** What the tools/call handler needs besides AgentTurns. */
export interface McpCallContext {
  tenantId: string;
  /** The agents the API key is limited to (docs/adr/0066): its tools are only theirs. Unset: every agent. */
  agentIds?: string[];
  /**
   * Where a call's turn is noted so a `notifications/cancelled` on any replica finds it. Revision
   * 2025-11-25 only: in 2026-07-28 a client cancels by closing the call's stream (the call's signal).
   */
  calls?: McpCallRegistry;
  logger: Logger;
}

/**
 * What a revision-2026-07-28 `input_required` result's `requestState` carries (HMAC-signed by the
 * SDK's codec, bound to the tenant): the turn that waits for the client's tools and the tool called.
 */
export interface ClientToolState {
  turnId: string;
  tool: string;
}

/**
 * In-flight tool calls by (API key, JSON-RPC request id) → turn. A stateless server answers each
 * POST with a fresh Server, so the `notifications/cancelled` for a call arrives at another one
 * (perhaps on another replica): it finds the turn here (Redis, in production) and cancels it.
 */
export interface McpCallRegistry {
  note(requestId: string | number, turnId: string): Promise<void>;
  forget(requestId: string | number): Promise<void>;
  find(requestId: string | number): Promise<string | undefined>;
}

/** Who the server says it is, in both eras (`initialize` and `server/discover`). */
const SERVER_INFO = { name: 'switchboard', title: 'Switchboard agents', version: '1.0.0' };
const SERVER_OPTIONS = {
  // No list_changed: the tool list is read per request (and 2026-07-28's subscriptions are not offered).
  capabilities: { tools: { listChanged: false } },
  instructions:
    "Each tool is one of the tenant's Switchboard agents: call it with a message; pass the session_id it " +
    'returns to continue the conversation.',
};

/** One tools/call as both eras' handlers hand it over. */
export interface AgentToolCall {
  name: string;
  arguments: Record<string, unknown> | undefined;
  requestId: string | number;
  progressToken?: string | number;
  /** Aborts when the client goes (closes the call's stream) or cancels it. */
  signal: AbortSignal;
  progress: (progress: number, message: string) => Promise<void>;
}

/**
 * How a call hands the client tool calls its turn waits for to the client: revision 2026-07-28 with
 * form elicitation asks in-band (an `input_required` result); otherwise the calls are an `isError`
 * result naming the REST route that answers them (`clientToolWaitResult`).
 */
export type AskClient<R> = (turn: TurnResponse, calls: McpClientToolCall[]) => Promise<R>;

/** A turn a call follows: admitted by it, or resumed by its answer to the client's tools. */
interface FollowedTurn {
  tenantId: string;
  sessionId: string;
  turnId: string;
  watch: LiveWatch;
  subscribedBeforeAdmission: boolean;
  /** The journal seq the call's part of the turn follows (0: the turn's start). */
  after: number;
}

/** The tenant's agents as tools; for a key limited to agents, only theirs (another is no tool). */
async function reachableTools(turns: AgentTurns, ctx: McpCallContext) {
  const agents = await turns.agents(ctx.tenantId);
  const only = ctx.agentIds;
  return agentTools(only ? agents.filter((a) => only.includes(a.id.toLowerCase())) : agents);
}

/** tools/list: the tenant's agents (a limited key's only). */
export async function listAgentTools(turns: AgentTurns, ctx: McpCallContext): Promise<Tool[]> {
  return (await reachableTools(turns, ctx)).map((t) => t.tool);
}

/**
 * tools/call: admits a turn and answers with it (errors of the caller's making are `isError` results).
 * A turn that waits for the client's own tools (`client_tools`, docs/adr/0047) is handed to `ask`
 * (revision 2026-07-28), else answered with the calls and the route that answers them.
 */
export async function callAgentTool<R = never>(
  turns: AgentTurns,
  ctx: McpCallContext,
  call: AgentToolCall,
  ask?: AskClient<R>,
): Promise<CallToolResult | R> {
  const entry = (await reachableTools(turns, ctx)).find((t) => t.tool.name === call.name);
  if (!entry) return toolError(`no tool named "${call.name}": tools/list names the agents`);
  const args = parseToolArguments(call.arguments);
  if ('error' in args) return toolError(args.error);

  let started: StartedTurn;
  try {
    const clientTools = args.clientTools
      ? turns.clientToolsFor(
          (await turns.agent(ctx.tenantId, entry.agentId)) ?? { tools: [] },
          args.clientTools,
          (i, field) => `client_tools[${i}].${field === 'parameters' ? 'inputSchema' : field}`,
        )
      : undefined;
    started = await turns.start({
      tenantId: ctx.tenantId,
      agentId: entry.agentId,
      text: args.message,
      sessionId: args.sessionId,
      createdBy: 'mcp',
      clientTools,
      ...(ctx.agentIds ? { reach: ctx.agentIds } : {}),
    });
  } catch (err) {
    if (err instanceof SessionRefused) return toolError(err.message);
    // A refusal of the admission (a paused tenant, a closed session, a client tool refused…) is the caller's to read.
    if (err instanceof AppError && err.status < 500) return toolError(err.message);
    throw err;
  }
  await ctx.calls?.note(call.requestId, started.turnId).catch((err: unknown) => {
    ctx.logger.warn({ err, turnId: started.turnId }, 'could not note an MCP call for cancellation');
  });
  try {
    return await followTurn(turns, ctx, call, { ...started, after: 0 }, ask);
  } finally {
    started.watch.close();
    await ctx.calls?.forget(call.requestId).catch(() => undefined);
  }
}

/**
 * Revision 2026-07-28, a retried tools/call (docs/adr/0036, 0047): its verified `requestState` names
 * the turn that waits for the client's tools, its `inputResponses` (one per call id) carry their
 * outputs. They answer the turn through `AgentTurns.answerClientTools` (all its pending calls at
 * once; the same answer again resumes nothing twice), then the call follows the resumed turn as a
 * new call would. A refused answer (unknown or missing ids, an expired wait, another output for an
 * answered call, a response that is not an accepted form) is a JSON-RPC -32602 error with
 * `data.reason` and `data.callIds`: nothing is stored.
 */
export async function resumeAgentTool<R>(
  turns: AgentTurns,
  ctx: McpCallContext,
  call: AgentToolCall,
  state: ClientToolState,
  responses: { inputResponses?: Record<string, unknown>; dropped?: string[] },
  ask: AskClient<R>,
): Promise<CallToolResult | R> {
  if (call.name !== state.tool) {
    throw invalidAnswer('tool_mismatch', `this requestState belongs to a call of "${state.tool}"`, []);
  }
  // A key limited to agents resumes only its agents' calls (docs/adr/0066): another is no tool.
  if (ctx.agentIds && !(await reachableTools(turns, ctx)).some((t) => t.tool.name === call.name))
    return toolError(`no tool named "${call.name}": tools/list names the agents`);
  if (responses.dropped?.length) {
    throw invalidAnswer(
      'invalid_output',
      `inputResponses ${responses.dropped.join(', ')}: not an elicitation result`,
      responses.dropped,
    );
  }
  const results: { callId: string; output: string }[] = [];
  for (const [callId, response] of Object.entries(responses.inputResponses ?? {})) {
    const output = clientToolOutput(response);
    if ('error' in output)
      throw invalidAnswer('invalid_output', `inputResponses.${callId}: ${output.error}`, [callId]);
    results.push({ callId, output: output.output });
  }
  if (results.length === 0) {
    throw invalidAnswer(
      'missing_call',
      'a retried call answers the input requests: inputResponses is empty',
      [],
    );
  }
  let answered: Awaited<ReturnType<AgentTurns['answerClientTools']>>;
  try {
    answered = await turns.answerClientTools({
      tenantId: ctx.tenantId,
      turnId: state.turnId,
      results,
      answeredBy: 'mcp',
    });
  } catch (err) {
    if (err instanceof ClientToolRefused) {
      throw invalidAnswer(err.reason, err.message, err.o.callIds ?? []);
    }
    throw err;
  }
  // Watched after the answer: the hold reads the turn first, so nothing committed since is missed.
  const watch = turns.watch(answered.sessionId);
  try {
    return await followTurn(
      turns,
      ctx,
      call,
      { ...answered, watch, subscribedBeforeAdmission: false, after: answered.afterSeq },
      ask,
    );
  } finally {
    watch.close();
  }
}

/** A refused client tool answer: the protocol's invalid-params error (the request was wrong, nothing stored). */
const invalidAnswer = (reason: string, message: string, callIds: string[]) =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, message, { reason, callIds });

/**
 * Holds the call until the turn ends, pauses for approval or waits for the client's tools (bounded
 * by WAIT_TIMEOUT_MS), reporting progress when asked; a closed stream (the call's signal) cancels it.
 */
async function followTurn<R>(
  turns: AgentTurns,
  ctx: McpCallContext,
  call: AgentToolCall,
  t: FollowedTurn,
  ask: AskClient<R> | undefined,
): Promise<CallToolResult | R> {
  const onAbort = () => {
    // The call's stream closed: the client left (docs/adr/0055).
    const cause = cancelCause('client_disconnected', 'the MCP tool call was closed');
    void turns.cancel(ctx.tenantId, t.turnId, cause).catch((err) => {
      ctx.logger.warn({ err, turnId: t.turnId }, 'could not cancel the turn of a cancelled MCP call');
    });
  };
  call.signal.addEventListener('abort', onAbort, { once: true });
  try {
    // The call is held at most WAIT_TIMEOUT_MS, progress reported or not.
    const deadline = Date.now() + turns.waitTimeoutMs;
    if (call.progressToken !== undefined) {
      const bounded = AbortSignal.any([call.signal, AbortSignal.timeout(turns.waitTimeoutMs)]);
      await followWithProgress(turns, t, bounded, call.progress);
    }
    const turn =
      (await turns.untilEnded(t, { signal: call.signal, orPaused: true, orClientTool: true, deadline })) ??
      (await turns.turn(ctx.tenantId, t.turnId));
    if (call.signal.aborted) return toolError(`turn ${t.turnId} was cancelled`);
    if (!turn) return toolError(`turn ${t.turnId} not found`);
    if (turn.status === 'awaiting_client_tool') {
      const calls = (await turns.clientToolCalls(ctx.tenantId, t.turnId)).filter(
        (c) => c.status === 'pending',
      );
      const handed = calls.map((c) => ({ callId: c.callId, name: c.name, arguments: c.arguments }));
      return ask ? await ask(turn, handed) : clientToolWaitResult(turn, handed);
    }
    return toolResultOf(turn);
  } finally {
    call.signal.removeEventListener('abort', onAbort);
  }
}

/** The revision-2025-11-25 server for one request of one tenant (SDK v1, stateless transport). */
export function mcpServerFor(turns: AgentTurns, ctx: McpCallContext): Server {
  const server = new Server(SERVER_INFO, SERVER_OPTIONS);

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await listAgentTools(turns, ctx) }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const progressToken = request.params._meta?.progressToken;
    return callAgentTool(turns, ctx, {
      name: request.params.name,
      arguments: request.params.arguments,
      requestId: extra.requestId,
      progressToken,
      signal: extra.signal,
      progress: (progress, message) =>
        extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: progressToken!, progress, message },
        }),
    });
  });

  // A cancellation arrives on its own POST, at a fresh server (stateless): the registry names the turn.
  server.setNotificationHandler(CancelledNotificationSchema, async (notification) => {
    const requestId = notification.params.requestId;
    if (requestId === undefined || !ctx.calls) return;
    const turnId = await ctx.calls.find(requestId);
    if (!turnId) return;
    await turns.cancel(
      ctx.tenantId,
      turnId,
      cancelCause('api_cancel', notification.params.reason ?? 'MCP notifications/cancelled'),
    );
  });

  return server;
}

/**
 * The revision-2026-07-28 server for one request of one tenant (SDK v2, served by `createMcpHandler`,
 * which answers `server/discover` from these capabilities and checks each request's `_meta`
 * envelope and `Mcp-*` headers). The same tools and calls; a client cancels by closing the call's
 * stream, which aborts the call's signal (no `notifications/cancelled` over HTTP in this revision).
 */
export function modernMcpServerFor(
  turns: AgentTurns,
  ctx: McpCallContext,
  state: RequestStateCodec<ClientToolState>,
): ModernServer {
  // The SDK verifies an echoed requestState (HMAC, expiry, tenant binding) before the handler runs.
  const server = new ModernServer(SERVER_INFO, {
    ...SERVER_OPTIONS,
    requestState: { verify: (wire, c) => state.verify(wire, c) },
  });

  // The same JSON; SDK v2 types a schema's properties as JSON values where v1 has `object`.
  server.setRequestHandler('tools/list', async () => ({
    tools: (await listAgentTools(turns, ctx)) as ModernTool[],
  }));

  server.setRequestHandler('tools/call', async (request, extra) => {
    const progressToken = request.params._meta?.progressToken;
    const call: AgentToolCall = {
      name: request.params.name,
      arguments: request.params.arguments,
      requestId: extra.mcpReq.id,
      progressToken,
      signal: extra.mcpReq.signal,
      progress: (progress, message) =>
        extra.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken: progressToken!, progress, message },
        }),
    };
    const ask = canElicit(extra) ? askWithElicitation(state, request.params.name, extra) : undefined;
    const resumed = extra.mcpReq.requestState<ClientToolState>();
    return resumed && ask
      ? await resumeAgentTool(
          turns,
          ctx,
          call,
          resumed,
          { inputResponses: extra.mcpReq.inputResponses, dropped: extra.mcpReq.droppedInputResponseKeys },
          ask,
        )
      : resumed
        ? invalidState()
        : await callAgentTool(turns, ctx, call, ask);
  });

  return server;
}

/** A requestState from a client that cannot answer elicitations: it was not minted for it. */
const invalidState = (): never => {
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'this client declares no form elicitation', {
    reason: 'elicitation_unsupported',
  });
};

/** Whether the request's client declares form elicitation (`elicitation: {}` means form, as the spec keeps it). */
function canElicit(extra: ServerContext): boolean {
  const envelope = extra.mcpReq.envelope as Record<string, unknown> | undefined;
  const caps = envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;
  const elicitation = caps?.elicitation as { form?: unknown; url?: unknown } | undefined;
  if (!elicitation) return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}

/**
 * Revision 2026-07-28: the client is asked for its tools' outputs in-band. The call answers
 * `input_required` with one form elicitation per pending call (keyed by the call id) and a signed
 * requestState naming the turn; the client's retry carries the answers (`resumeAgentTool`).
 */
function askWithElicitation(
  state: RequestStateCodec<ClientToolState>,
  tool: string,
  extra: ServerContext,
): AskClient<InputRequiredResult> {
  return async (turn, calls) =>
    inputRequired({
      inputRequests: Object.fromEntries(
        calls.map((c) => [c.callId, inputRequired.elicit(clientToolElicitation(c))]),
      ),
      requestState: await state.mint({ turnId: turn.id, tool }, extra),
    });
}

/**
 * Follows the turn's live stream until it ends, reporting progress: a step per provider round, tool
 * call and streamed text chunk, the message saying which. Text is reported as it streams
 * (truncated), so a client sees that a long answer is being written.
 */
export async function followWithProgress(
  turns: AgentTurns,
  t: Pick<StartedTurn, 'sessionId' | 'turnId'> & { after?: number },
  signal: AbortSignal,
  report: (progress: number, message: string) => Promise<void>,
): Promise<void> {
  let progress = 0;
  let text = '';
  for await (const item of turns.events(
    { sessionId: t.sessionId, turnId: t.turnId, after: t.after },
    signal,
  )) {
    // Silence (SSE_HEARTBEAT_MS): a step all the same, so the client (and any proxy) knows the call lives.
    if (item.kind === 'idle') {
      progress += 1;
      await report(progress, 'working');
      continue;
    }
    // A committed text whose live chunks were reported already is not reported (or counted) again.
    if (item.kind === 'journaled' && item.streamed) continue;
    const message = progressMessage(item.event.type, item.event.data, (chunk) => (text += chunk));
    if (message === undefined) continue;
    progress += 1;
    await report(progress, message === '' ? summarise(text) : message);
    // Paused for a person's decision or the client's tools: the call answers now.
    if (
      item.event.type === EventType.ApprovalRequested ||
      item.event.type === EventType.ClientToolRequested
    ) {
      return;
    }
  }
}
