import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolError } from '@switchboard/tools';

/**
 * What went wrong talking to an MCP server, as the model and the failure classifier see it
 * (docs/adr/0023): `mcp_unavailable` (cannot connect, 5xx; retryable), `mcp_timeout` (no answer
 * within the server's timeout; retryable), `mcp_auth_failed` (401/403), `mcp_protocol_error` (the
 * server broke the protocol or refused the request). A tool's own `isError` result is
 * `mcp_tool_error` (see tools.ts).
 */
export function mcpFailure(err: unknown, server: string): ToolError {
  const details = { server };
  if (err instanceof ToolError) return err;
  if (err instanceof McpError) {
    if (err.code === Number(ErrorCode.RequestTimeout)) {
      return new ToolError('mcp_timeout', `MCP server "${server}" did not answer in time`, {
        details,
        recoveryHint: 'retry later or ask for less',
        retryable: true,
      });
    }
    if (err.code === Number(ErrorCode.ConnectionClosed)) return unavailable(server, err.message);
    return new ToolError('mcp_protocol_error', `MCP server "${server}": ${err.message}`.slice(0, 1000), {
      details: { ...details, code: err.code },
      retryable: false,
    });
  }
  if (err instanceof StreamableHTTPError) {
    const status = err.code ?? 0;
    if (status === 401 || status === 403) {
      return new ToolError('mcp_auth_failed', `MCP server "${server}" answered ${status} unauthorized`, {
        details: { ...details, status },
        recoveryHint: 'the server refused its credentials; update the server registration',
        retryable: false,
      });
    }
    if (status >= 500 || status === 0 || status === 429) return unavailable(server, err.message);
    return new ToolError('mcp_protocol_error', `MCP server "${server}" answered ${status}`, {
      details: { ...details, status },
      retryable: false,
    });
  }
  // fetch's network failures (connection refused, reset, DNS, a refused address) are TypeErrors with a cause.
  const cause = (err as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  if (cause instanceof ToolError) return cause;
  const message = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
  return unavailable(server, message);
}

function unavailable(server: string, why: string): ToolError {
  return new ToolError('mcp_unavailable', `MCP server "${server}" is unavailable: ${why}`.slice(0, 1000), {
    details: { server },
    recoveryHint: 'retry later; the server may be down',
    retryable: true,
  });
}
