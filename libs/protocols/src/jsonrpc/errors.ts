import type { ErrorAnswer } from '@switchboard/contracts';

/** JSON-RPC 2.0's codes: a body that is not JSON is a parse error; other refusals an invalid request. */
export const JSONRPC_PARSE_ERROR = -32700;
export const JSONRPC_INVALID_REQUEST = -32600;
export const JSONRPC_INTERNAL_ERROR = -32603;

/**
 * An error of a JSON-RPC route before its handler read the request (auth, body parser, rate limit):
 * the HTTP status stays (401, 413, 415, 429…, so an SDK client sees it), the body is a JSON-RPC error
 * response with no id (the request was not read), the gateway's code in `error.data.code`. The error
 * shape of the MCP server and the A2A endpoints (docs/adr/0036, 0037).
 */
export function toJsonRpcErrorAnswer(answer: ErrorAnswer): Omit<ErrorAnswer, 'body'> & { body: unknown } {
  const { code, message } = answer.body.error;
  const rpc =
    code === 'invalid_json'
      ? JSONRPC_PARSE_ERROR
      : answer.status >= 500
        ? JSONRPC_INTERNAL_ERROR
        : JSONRPC_INVALID_REQUEST;
  return {
    status: answer.status,
    headers: answer.headers,
    body: { jsonrpc: '2.0', id: null, error: { code: rpc, message, data: { code } } },
  };
}
