import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { EventType, type TurnResponse } from '@switchboard/contracts';

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
