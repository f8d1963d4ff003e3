import type { Agent } from '@prisma/client';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { AppError, EventType, type TurnResponse } from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { SessionRefused, type AgentTurns, type StartedTurn } from '@switchboard/agent-turns';

/**
 * Switchboard as an MCP server (docs/adr/0036): `/mcp`, Streamable HTTP, stateless. Each of the
 * tenant's agents is a tool; calling it admits a turn (AgentTurns: the seams chat completions uses)
 * and answers with the turn's final text. Plain TypeScript: the controller hands each request to a
 * fresh `Server` from `mcpServerFor` and its transport.
 */

/** MCP's tool-name rule (spec 2025-11-25): 1–128 characters of A–Z, a–z, 0–9, `_`, `-` and `.`. */
const TOOL_NAME_MAX = 128;
const NOT_IN_NAME = /[^A-Za-z0-9_.-]+/g;

/** The input every agent tool takes. */
export const AGENT_TOOL_INPUT = {
  type: 'object',
  properties: {
    message: { type: 'string', minLength: 1, description: 'What to ask the agent' },
    session_id: {
      type: 'string',
      format: 'uuid',
      description:
        'Continue this session (the `session_id` of an earlier call of the same tool); without it a new session starts',
    },
  },
  required: ['message'],
  additionalProperties: false,
} as const;

/** What a call answers with besides its text, so a client can continue the session. */
export const AGENT_TOOL_OUTPUT = {
  type: 'object',
  properties: {
    session_id: { type: 'string' },
    turn_id: { type: 'string' },
    status: { type: 'string' },
  },
  required: ['session_id', 'turn_id', 'status'],
} as const;

/** An agent's name as an MCP tool name: runs of other characters become `_`, at most 128 characters. */
export function toolNameOf(name: string): string {
  const cleaned = name
    .trim()
    .replace(NOT_IN_NAME, '_')
    .replace(/^_+|_+$/g, '');
  return cleaned.slice(0, TOOL_NAME_MAX);
}

/**
 * The agents as tools, named after them. Agents are given most recent first: a name two agents
 * share (or that sanitizes to the same) is the most recent's (as `model` names it on chat
 * completions), and the others get `<name>_<first 8 of their id>`.
 */
export function agentTools(agents: readonly Agent[]): { tool: Tool; agentId: string }[] {
  const taken = new Set<string>();
  return agents.map((agent) => {
    const base = toolNameOf(agent.name) || 'agent';
    let name = base;
    if (taken.has(name)) {
      const suffix = `_${agent.id.replace(/-/g, '').slice(0, 8)}`;
      name = `${base.slice(0, TOOL_NAME_MAX - suffix.length)}${suffix}`;
    }
    taken.add(name);
    return {
      agentId: agent.id,
      tool: {
        name,
        title: agent.name,
        description: describe(agent),
        inputSchema: AGENT_TOOL_INPUT as unknown as Tool['inputSchema'],
        outputSchema: AGENT_TOOL_OUTPUT as unknown as Tool['outputSchema'],
        _meta: { 'switchboard/agent_id': agent.id },
      },
    };
  });
}

/** The agent's instructions are what it is for; long ones are cut (the tool list is in a model's prompt). */
function describe(agent: Agent): string {
  const instructions = agent.instructions.trim().replace(/\s+/g, ' ');
  const head = `Ask the Switchboard agent "${agent.name}". Returns its answer; pass the returned session_id to continue the conversation.`;
  if (!instructions) return head;
  const cut = instructions.length > 500 ? `${instructions.slice(0, 497)}...` : instructions;
  return `${head} Its instructions: ${cut}`;
}

/** A tool call's arguments, checked; a message for the client when they are wrong. */
export function parseToolArguments(
  args: Record<string, unknown> | undefined,
): { message: string; sessionId?: string } | { error: string } {
  const a = args ?? {};
  const unknown = Object.keys(a).filter((k) => k !== 'message' && k !== 'session_id');
  if (unknown.length > 0) return { error: `unknown argument(s): ${unknown.join(', ')}` };
  if (typeof a.message !== 'string' || a.message.trim() === '') {
    return { error: 'message: a non-empty string is required' };
  }
  if (a.session_id !== undefined && (typeof a.session_id !== 'string' || a.session_id === '')) {
    return { error: 'session_id: a session id (string) is expected' };
  }
  return { message: a.message, ...(a.session_id !== undefined ? { sessionId: a.session_id } : {}) };
}

/** A tool error: a result the model reads (`isError`), not a protocol error. */
export const toolError = (text: string, structured?: Record<string, unknown>): CallToolResult => ({
  content: [{ type: 'text', text }],
  isError: true,
  ...(structured ? { structuredContent: structured } : {}),
});

/** An ended (or still running, at the bound) turn as the call's result. */
export function toolResultOf(turn: TurnResponse): CallToolResult {
  const structured = { session_id: turn.sessionId, turn_id: turn.id, status: turn.status };
  switch (turn.status) {
    case 'completed':
      return { content: [{ type: 'text', text: turn.finalText ?? '' }], structuredContent: structured };
    case 'cancelled':
      return toolError(`turn ${turn.id} was cancelled before it answered`, structured);
    case 'failed': {
      const f = turn.failure;
      const why = f ? `${f.kind}: ${f.brief || f.message}` : (turn.stopReason ?? 'failed');
      return toolError(`turn ${turn.id} failed (${why})`, structured);
    }
    case 'awaiting_approval':
      return toolError(
        `turn ${turn.id} is waiting for a person to approve a tool call (POST /v1/approvals/{id}/decision); ` +
          `its answer will be at GET /v1/turns/${turn.id}`,
        structured,
      );
    case 'queued':
    case 'running':
    case 'awaiting_subagent':
      return toolError(
        `turn ${turn.id} did not end in time; it goes on running: GET /v1/turns/${turn.id} for its answer`,
        structured,
      );
  }
}

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

/** The progress message of an event ('' for text: the caller summarises the text so far), or undefined to skip it. */
export function progressMessage(
  type: string,
  data: Record<string, unknown>,
  addText: (chunk: string) => void,
): string | undefined {
  switch (type) {
    case EventType.TurnStarted:
      return 'turn started';
    case EventType.ProviderRoundStarted:
      return `model round ${typeof data.round === 'number' ? data.round + 1 : ''}`.trim();
    case EventType.ToolCallStarted:
      return `calling tool ${typeof data.name === 'string' ? data.name : ''}`.trim();
    case EventType.ToolCallCompleted:
      return `tool ${typeof data.name === 'string' ? data.name : ''} done`.replace('  ', ' ');
    case EventType.ApprovalRequested:
      return 'waiting for a person to approve a tool call';
    case EventType.TextDelta:
      if (typeof data.text !== 'string' || data.text === '') return undefined;
      addText(data.text);
      return '';
    default:
      return undefined;
  }
}

const summarise = (text: string): string => {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > 200 ? `writing: …${t.slice(-200)}` : `writing: ${t}`;
};
