import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { Server as ModernServer, type Tool as ModernTool } from '@modelcontextprotocol/server';
import { AppError, EventType } from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import {
  agentTools,
  parseToolArguments,
  progressMessage,
  summarise,
  toolError,
  toolResultOf,
} from '@switchboard/protocols';
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
  /**
   * Where a call's turn is noted so a `notifications/cancelled` on any replica finds it. Revision
   * 2025-11-25 only: in 2026-07-28 a client cancels by closing the call's stream (the call's signal).
   */
  calls?: McpCallRegistry;
  logger: Logger;
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

/** tools/list: the tenant's agents. */
export async function listAgentTools(turns: AgentTurns, ctx: McpCallContext): Promise<Tool[]> {
  return agentTools(await turns.agents(ctx.tenantId)).map((t) => t.tool);
}

/** tools/call: admits a turn and answers with it (errors of the caller's making are `isError` results). */
export async function callAgentTool(
  turns: AgentTurns,
  ctx: McpCallContext,
  call: AgentToolCall,
): Promise<CallToolResult> {
  const entry = agentTools(await turns.agents(ctx.tenantId)).find((t) => t.tool.name === call.name);
  if (!entry) return toolError(`no tool named "${call.name}": tools/list names the agents`);
  const args = parseToolArguments(call.arguments);
  if ('error' in args) return toolError(args.error);

  let started: StartedTurn;
  try {
    started = await turns.start({
      tenantId: ctx.tenantId,
      agentId: entry.agentId,
      text: args.message,
      sessionId: args.sessionId,
      createdBy: 'mcp',
    });
  } catch (err) {
    if (err instanceof SessionRefused) return toolError(err.message);
    // A refusal of the admission (a paused tenant, a closed session…) is the caller's to read.
    if (err instanceof AppError && err.status < 500) return toolError(err.message);
    throw err;
  }
  await ctx.calls?.note(call.requestId, started.turnId).catch((err: unknown) => {
    ctx.logger.warn({ err, turnId: started.turnId }, 'could not note an MCP call for cancellation');
  });
  const onAbort = () => {
    void turns.cancel(ctx.tenantId, started.turnId, 'the MCP client cancelled the tool call').catch((err) => {
      ctx.logger.warn({ err, turnId: started.turnId }, 'could not cancel the turn of a cancelled MCP call');
    });
  };
  call.signal.addEventListener('abort', onAbort, { once: true });
  try {
    // The call is held at most WAIT_TIMEOUT_MS, progress reported or not.
    const deadline = Date.now() + turns.waitTimeoutMs;
    if (call.progressToken !== undefined) {
      const bounded = AbortSignal.any([call.signal, AbortSignal.timeout(turns.waitTimeoutMs)]);
      await followWithProgress(turns, started, bounded, call.progress);
    }
    const turn =
      (await turns.untilEnded(started, { signal: call.signal, orPaused: true, deadline })) ??
      (await turns.turn(ctx.tenantId, started.turnId));
    if (call.signal.aborted) return toolError(`turn ${started.turnId} was cancelled`);
    if (!turn) return toolError(`turn ${started.turnId} not found`);
    return toolResultOf(turn);
  } finally {
    call.signal.removeEventListener('abort', onAbort);
    started.watch.close();
    await ctx.calls?.forget(call.requestId).catch(() => undefined);
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
      notification.params.reason ?? 'the MCP client cancelled the tool call',
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
export function modernMcpServerFor(turns: AgentTurns, ctx: McpCallContext): ModernServer {
  const server = new ModernServer(SERVER_INFO, SERVER_OPTIONS);

  // The same JSON; SDK v2 types a schema's properties as JSON values where v1 has `object`.
  server.setRequestHandler('tools/list', async () => ({
    tools: (await listAgentTools(turns, ctx)) as ModernTool[],
  }));

  server.setRequestHandler('tools/call', async (request, extra) => {
    const progressToken = request.params._meta?.progressToken;
    return callAgentTool(turns, ctx, {
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
    });
  });

  return server;
}

/**
 * Follows the turn's live stream until it ends, reporting progress: a step per provider round, tool
 * call and streamed text chunk, the message saying which. Text is reported as it streams
 * (truncated), so a client sees that a long answer is being written.
 */
export async function followWithProgress(
  turns: AgentTurns,
  started: StartedTurn,
  signal: AbortSignal,
  report: (progress: number, message: string) => Promise<void>,
): Promise<void> {
  let progress = 0;
  let text = '';
  for await (const item of turns.events({ sessionId: started.sessionId, turnId: started.turnId }, signal)) {
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
    // Paused for a person's decision: the call answers now (the turn goes on once decided).
    if (item.event.type === EventType.ApprovalRequested) return;
  }
}
