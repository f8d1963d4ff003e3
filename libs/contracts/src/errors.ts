/** The one error shape every endpoint answers with: `{error: {code, message, details?}}`. */
export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

/** An error as the gateway answers it: status, body in the one error shape (`ErrorBody`), headers. */
export interface ErrorAnswer {
  status: number;
  body: ErrorBody;
  headers: Record<string, string>;
}

export type ErrorCode =
  | 'bad_request'
  | 'validation_failed'
  | 'invalid_json'
  | 'unauthorized'
  | 'insufficient_scope'
  | 'tenant_paused'
  | 'agent_stopped'
  | 'not_found'
  | 'conflict'
  | 'session_busy'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'request_timeout'
  | 'uri_too_long'
  | 'headers_too_large'
  | 'idempotency_key_in_flight'
  | 'idempotency_key_reused'
  | 'rate_limited'
  | 'internal'
  | 'unavailable'
  /** A dataset item over DATASET_ITEM_MAX_BYTES (docs/adr/0063). */
  | 'item_too_large';

const STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  validation_failed: 400,
  invalid_json: 400,
  unauthorized: 401,
  /** The API key's role does not grant the scope the route needs (docs/adr/0066); `details.scope` names it. */
  insufficient_scope: 403,
  /** The operator paused the tenant (docs/adr/0030): nothing is admitted until it is resumed. */
  tenant_paused: 403,
  /** The agent is stopped (docs/adr/0031): nothing new is admitted for it until it is resumed. */
  agent_stopped: 409,
  not_found: 404,
  conflict: 409,
  /** The session has a turn that has not ended (queued, running, waiting): what was asked needs it idle (docs/adr/0053). */
  session_busy: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  request_timeout: 408,
  uri_too_long: 414,
  headers_too_large: 431,
  /** The first request with this Idempotency-Key is still being processed: retry later. */
  idempotency_key_in_flight: 409,
  /** The Idempotency-Key was already used with a different request body. */
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal: 500,
  /** A dependency (Postgres) cannot be reached: retry after the Retry-After header's seconds. */
  unavailable: 503,
  item_too_large: 400,
};

/** Every error code, for the OpenAPI error schema. */
export const ERROR_CODES = Object.keys(STATUS) as [ErrorCode, ...ErrorCode[]];

/** A failure the caller can act on. Thrown by core code, rendered by the gateway. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = STATUS[code];
  }

  toBody(): ErrorBody {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.details === undefined ? {} : { details: this.details }),
      },
    };
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);

/**
 * The tenant is paused by the operator (docs/adr/0030): admission refuses every new input (a
 * message, a chat completion, a webhook delivery, a scheduled tick) and writes nothing. Reads work.
 */
export class TenantPausedError extends AppError {
  constructor() {
    super(
      'tenant_paused',
      'the tenant is paused by the operator: no new work is admitted until it is resumed (reads still work)',
    );
    this.name = 'TenantPausedError';
  }
}

/**
 * The agent is stopped (seed 002 "Turn Terminal", the stopped boundary; docs/adr/0031): every new
 * admission for it is refused and nothing is stored, until POST /v1/agents/:id/resume.
 */
export class AgentStoppedError extends AppError {
  constructor(agentId?: string) {
    super(
      'agent_stopped',
      'the agent is stopped: nothing new is admitted for it. Resume it first ' +
        `(POST /v1/agents/${agentId ?? ':id'}/resume); a wake or a message does not cross the stopped boundary`,
      agentId ? { agentId, resume: `/v1/agents/${agentId}/resume` } : undefined,
    );
    this.name = 'AgentStoppedError';
  }
}

/**
 * Why a request cannot go on in the session it asked for (each protocol says it in its own shape):
 * `session_not_found` (not the tenant's, or no such id), `previous_not_found` (the previous turn a
 * request continues from is not the tenant's), `other_agent` (the session is another agent's),
 * `session_closed`, `key_reused` (the Idempotency-Key's session is another agent's: the key was used
 * for another request). A stopped agent and a paused tenant are refused by Admission itself, before
 * anything is written, as `AgentStoppedError` / `TenantPausedError`.
 */
export type SessionRefusal =
  'session_not_found' | 'previous_not_found' | 'other_agent' | 'session_closed' | 'key_reused';

/** Why a message could not be admitted into the session a client named. */
export class SessionRefused extends Error {
  constructor(
    readonly reason: SessionRefusal,
    message: string,
    /** For `other_agent`: the agent whose session it is. */
    readonly agentId?: string,
  ) {
    super(message);
    this.name = 'SessionRefused';
  }
}

/**
 * Why client-side tools (docs/adr/0047) were refused, whichever protocol carried them; each protocol
 * says it in its own shape (`reason`, the request `param` at fault, the call ids named). Nothing is
 * admitted or answered when one is thrown.
 * - declarations: `invalid_tool` (a name or description that cannot be offered), `duplicate_tool`,
 *   `tool_name_clash` (the agent has a tool of that name), `invalid_schema` (not a JSON Schema object),
 *   `invalid_tool_choice` (a forced tool that is not offered);
 * - results: `unknown_call` (not a client call of the tenant's turn: 404), `missing_call` (a pending
 *   call left unanswered), `several_turns`, `answered_otherwise` (answered before with another
 *   output: 409), `expired` (the wait expired, the turn ended `client_tool_timeout`: 409),
 *   `cancelled`, `turn_not_waiting` (409).
 */
export type ClientToolRefusal =
  | 'invalid_tool'
  | 'duplicate_tool'
  | 'tool_name_clash'
  | 'invalid_schema'
  | 'invalid_tool_choice'
  | 'unknown_call'
  | 'missing_call'
  | 'several_turns'
  | 'answered_otherwise'
  | 'expired'
  | 'cancelled'
  | 'turn_not_waiting';

const CLIENT_TOOL_CODE: Record<ClientToolRefusal, ErrorCode> = {
  invalid_tool: 'validation_failed',
  duplicate_tool: 'validation_failed',
  tool_name_clash: 'validation_failed',
  invalid_schema: 'validation_failed',
  invalid_tool_choice: 'validation_failed',
  unknown_call: 'not_found',
  missing_call: 'bad_request',
  several_turns: 'bad_request',
  answered_otherwise: 'conflict',
  expired: 'conflict',
  cancelled: 'conflict',
  turn_not_waiting: 'conflict',
};

export class ClientToolRefused extends AppError {
  constructor(
    readonly reason: ClientToolRefusal,
    message: string,
    readonly o: { param?: string; callIds?: string[] } = {},
  ) {
    super(CLIENT_TOOL_CODE[reason], message, { reason, ...o });
    this.name = 'ClientToolRefused';
  }
}
