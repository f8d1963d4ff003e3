import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { cancelledText, EventType, type TurnResponse } from '@switchboard/contracts';

/**
 * MCP's mapping (docs/adr/0036): each of the tenant's agents as a tool, a tool call's arguments, an
 * ended turn as the call's result, a turn's events as progress messages. Plain functions; the
 * gateway's MCP server (apps/gateway/src/protocols/mcp) does the I/O.
 */

/** The columns of an agent a tool is made of. */
export interface ToolAgent {
  id: string;
  name: string;
  instructions: string;
}

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
    client_tools: {
      type: 'array',
      description:
        'Tools you (the MCP client) run for the agent during this call, as MCP Tool objects. When the agent calls ' +
        'one, revision 2026-07-28 answers `input_required` with an `elicitation/create` per call (the call in ' +
        '`_meta["switchboard/client_tool_call"]`; accept with `{output}`); revision 2025-11-25 answers with the ' +
        'calls, to be answered at POST /v1/turns/{turn_id}/client-tool-results',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          description: { type: 'string' },
          inputSchema: { type: 'object' },
        },
        required: ['name'],
      },
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
    cancel_reason: {
      type: ['string', 'null'],
      description: 'Why a cancelled turn was cancelled (status cancelled; docs/adr/0055)',
    },
    client_tool_calls: {
      type: 'array',
      description: 'The client tool calls the turn waits for (status awaiting_client_tool)',
      items: {
        type: 'object',
        properties: { call_id: { type: 'string' }, name: { type: 'string' }, arguments: {} },
        required: ['call_id', 'name', 'arguments'],
      },
    },
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
export function agentTools(agents: readonly ToolAgent[]): { tool: Tool; agentId: string }[] {
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
function describe(agent: ToolAgent): string {
  const instructions = agent.instructions.trim().replace(/\s+/g, ' ');
  const head = `Ask the Switchboard agent "${agent.name}". Returns its answer; pass the returned session_id to continue the conversation.`;
  if (!instructions) return head;
  const cut = instructions.length > 500 ? `${instructions.slice(0, 497)}...` : instructions;
  return `${head} Its instructions: ${cut}`;
}

/** A tool the MCP client declares it runs (`client_tools[i]`, an MCP Tool object), before AgentTurns checks it. */
export interface McpClientTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A tool call's arguments, checked; a message for the client when they are wrong. */
export function parseToolArguments(
  args: Record<string, unknown> | undefined,
): { message: string; sessionId?: string; clientTools?: McpClientTool[] } | { error: string } {
  const a = args ?? {};
  const known = new Set(['message', 'session_id', 'client_tools']);
  const unknown = Object.keys(a).filter((k) => !known.has(k));
  if (unknown.length > 0) return { error: `unknown argument(s): ${unknown.join(', ')}` };
  if (typeof a.message !== 'string' || a.message.trim() === '') {
    return { error: 'message: a non-empty string is required' };
  }
  if (a.session_id !== undefined && (typeof a.session_id !== 'string' || a.session_id === '')) {
    return { error: 'session_id: a session id (string) is expected' };
  }
  const clientTools = parseClientTools(a.client_tools);
  if (typeof clientTools === 'string') return { error: clientTools };
  return {
    message: a.message,
    ...(a.session_id !== undefined ? { sessionId: a.session_id } : {}),
    ...(clientTools?.length ? { clientTools } : {}),
  };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `client_tools`: MCP Tool objects (name, description?, inputSchema?); an error message when malformed. */
function parseClientTools(v: unknown): McpClientTool[] | string | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v))
    return 'client_tools: an array of tools ({name, description?, inputSchema?}) is expected';
  const tools: McpClientTool[] = [];
  for (const [i, t] of v.entries()) {
    if (!isObject(t) || typeof t.name !== 'string') return `client_tools[${i}].name: a string is required`;
    if (t.description !== undefined && typeof t.description !== 'string') {
      return `client_tools[${i}].description: a string is expected`;
    }
    if (t.inputSchema !== undefined && !isObject(t.inputSchema)) {
      return `client_tools[${i}].inputSchema: a JSON Schema object is expected`;
    }
    tools.push({
      name: t.name,
      description: t.description ?? '',
      parameters: t.inputSchema ?? { type: 'object', properties: {} },
    });
  }
  return tools;
}

/** A client tool call the turn waits for, as handed to an MCP client. */
export interface McpClientToolCall {
  /** The wait's id (`call_…`): the key of its input request, and what the REST route answers. */
  callId: string;
  name: string;
  /** The model's JSON arguments as written. */
  arguments: string;
}

/** The `_meta` key of an elicitation request that carries the client tool call it stands for. */
export const CLIENT_TOOL_CALL_META = 'switchboard/client_tool_call';

/** The call's arguments as JSON when they parse (they are the model's text), else the text. */
const argumentsOf = (call: McpClientToolCall): unknown => {
  try {
    return JSON.parse(call.arguments) as unknown;
  } catch {
    return call.arguments;
  }
};

/**
 * Revision 2026-07-28: the form-mode `elicitation/create` that asks the client for one call's output
 * (an `input_required` result's input request, keyed by the call id). The message says it to a person;
 * a program reads the call from `_meta["switchboard/client_tool_call"]`. The answer: `action: accept`
 * with `content.output` (a string: the tool's result, as a tool result is text to the model).
 */
export function clientToolElicitation(call: McpClientToolCall) {
  return {
    mode: 'form' as const,
    message: `The agent calls your tool "${call.name}" with the arguments ${call.arguments}: run it and send its output.`,
    requestedSchema: {
      type: 'object' as const,
      properties: {
        output: {
          type: 'string' as const,
          title: `Output of ${call.name}`,
          description: 'What the tool returned (text or JSON), given to the agent as the tool result',
        },
      },
      required: ['output'],
    },
    _meta: {
      [CLIENT_TOOL_CALL_META]: { call_id: call.callId, name: call.name, arguments: argumentsOf(call) },
    },
  };
}

/**
 * A retried call's answer to one elicitation (`inputResponses[callId]`) as the tool's output, or why
 * it cannot be one. Accepted: its `content.output` (a string); declined or cancelled: the client did
 * not run the tool, which the model is told (the turn goes on without the result).
 */
export function clientToolOutput(response: unknown): { output: string } | { error: string } {
  if (!isObject(response) || typeof response.action !== 'string') {
    return { error: 'not an elicitation result ({action, content})' };
  }
  if (response.action === 'decline' || response.action === 'cancel') {
    return { output: JSON.stringify({ error: `the client did not run the tool (${response.action})` }) };
  }
  if (response.action !== 'accept') return { error: `unknown action ${JSON.stringify(response.action)}` };
  const output = isObject(response.content) ? response.content.output : undefined;
  if (typeof output !== 'string') return { error: 'an accepted answer carries content.output, a string' };
  return { output };
}

/**
 * A turn waiting for client tool calls where the client cannot be asked in-band (revision
 * 2025-11-25, or a 2026-07-28 client without form elicitation): an `isError` result naming the calls
 * and the route that answers them, the calls in `structuredContent.client_tool_calls`.
 */
export function clientToolWaitResult(
  turn: TurnResponse,
  calls: readonly McpClientToolCall[],
): CallToolResult {
  const listed = calls.map((c) => `${c.callId} (${c.name} ${c.arguments})`).join(', ');
  return toolError(
    `turn ${turn.id} waits for your client tools: ${listed}. Run them and POST their outputs to ` +
      `/v1/turns/${turn.id}/client-tool-results ({"results": [{"callId", "output"}]}); ` +
      `its answer will then be at GET /v1/turns/${turn.id}`,
    {
      session_id: turn.sessionId,
      turn_id: turn.id,
      status: turn.status,
      client_tool_calls: calls.map((c) => ({ call_id: c.callId, name: c.name, arguments: argumentsOf(c) })),
    },
  );
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
      return toolError(cancelledText(turn), { ...structured, cancel_reason: turn.cancelReason });
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
    case 'awaiting_client_tool':
      return toolError(
        `turn ${turn.id} did not end in time; it goes on running: GET /v1/turns/${turn.id} for its answer`,
        structured,
      );
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
    case EventType.ClientToolRequested:
      return `waiting for the client to run ${typeof data.name === 'string' ? data.name : 'a tool'}`;
    case EventType.TextDelta:
      if (typeof data.text !== 'string' || data.text === '') return undefined;
      addText(data.text);
      return '';
    default:
      return undefined;
  }
}

export const summarise = (text: string): string => {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > 200 ? `writing: …${t.slice(-200)}` : `writing: ${t}`;
};
