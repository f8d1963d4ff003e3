import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
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
 * and answers with the turn's final text. Plain TypeScript: the controller hands each request to a
 * fresh `Server` from `mcpServerFor` and its transport.
 */

/** What the tools/call handler needs besides AgentTurns. */
export interface McpCallContext {
  tenantId: string;
  /** Where a call's turn is noted so a `notifications/cancelled` on any replica finds it. */
  calls: McpCallRegistry;
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

/** The MCP server for one request of one tenant. */
export function mcpServerFor(turns: AgentTurns, ctx: McpCallContext): Server {
  const server = new Server(
    { name: 'switchboard', title: 'Switchboard agents', version: '1.0.0' },
    {
      capabilities: { tools: { listChanged: false } },
      instructions:
        "Each tool is one of the tenant's Switchboard agents: call it with a message; pass the session_id it " +
        'returns to continue the conversation.',
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: agentTools(await turns.agents(ctx.tenantId)).map((t) => t.tool),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const entry = agentTools(await turns.agents(ctx.tenantId)).find(
      (t) => t.tool.name === request.params.name,
    );
    if (!entry) return toolError(`no tool named "${request.params.name}": tools/list names the agents`);
    const args = parseToolArguments(request.params.arguments);
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
    await ctx.calls.note(extra.requestId, started.turnId).catch((err: unknown) => {
      ctx.logger.warn({ err, turnId: started.turnId }, 'could not note an MCP call for cancellation');
    });
    const onAbort = () => {
      void turns
        .cancel(ctx.tenantId, started.turnId, 'the MCP client cancelled the tool call')
        .catch((err) => {
          ctx.logger.warn(
            { err, turnId: started.turnId },
            'could not cancel the turn of a cancelled MCP call',
          );
        });
    };
    extra.signal.addEventListener('abort', onAbort, { once: true });
    try {
      // The call is held at most WAIT_TIMEOUT_MS, progress reported or not.
      const deadline = Date.now() + turns.waitTimeoutMs;
      const progressToken = request.params._meta?.progressToken;
      if (progressToken !== undefined) {
        const bounded = AbortSignal.any([extra.signal, AbortSignal.timeout(turns.waitTimeoutMs)]);
        await followWithProgress(turns, started, bounded, (progress, message) =>
          extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress, message },
          }),
        );
      }
      const turn =
        (await turns.untilEnded(started, { signal: extra.signal, orPaused: true, deadline })) ??
        (await turns.turn(ctx.tenantId, started.turnId));
      if (extra.signal.aborted) return toolError(`turn ${started.turnId} was cancelled`);
      if (!turn) return toolError(`turn ${started.turnId} not found`);
      return toolResultOf(turn);
    } finally {
      extra.signal.removeEventListener('abort', onAbort);
      started.watch.close();
      await ctx.calls.forget(extra.requestId).catch(() => undefined);
    }
  });

  // A cancellation arrives on its own POST, at a fresh server (stateless): the registry names the turn.
  server.setNotificationHandler(CancelledNotificationSchema, async (notification) => {
    const requestId = notification.params.requestId;
    if (requestId === undefined) return;
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
