import { classifyToolFailure } from './failures';

const f = (kind: string, message: string, retryable = false) => ({
  ok: false as const,
  kind,
  message,
  retryable,
});

describe('classifyToolFailure', () => {
  it.each([
    [f('timeout', 'tool timed out after 10 ms', true), 'Timeout', 'recoverable', true],
    // MCP tools' failures (docs/adr/0023).
    [f('mcp_timeout', 'MCP server "srv" did not answer in time', true), 'Timeout', 'recoverable', true],
    [
      f('mcp_unavailable', 'MCP server "srv" is unavailable: ECONNREFUSED', true),
      'ServiceUnavailable',
      'recoverable',
      true,
    ],
    [
      f('mcp_auth_failed', 'MCP server "srv" answered 401 unauthorized'),
      'BadCredentials',
      'needs_user_confirmation',
      false,
    ],
    [f('mcp_tool_error', 'the widget is jammed'), 'ToolError', 'recoverable', false],
    [f('unknown_tool', 'no tool named "x"', true), 'MissingApp', 'recoverable', true],
    [f('invalid_arguments', 'q: expected string', true), 'BadArguments', 'recoverable', true],
    [f('blocked', 'tool is blocked for this tenant'), 'BlockedByPolicy', 'blocked_by_policy', false],
    [
      f('blocked_address', 'refused to fetch http://169.254.169.254/: link-local (cloud metadata)'),
      'BlockedByPolicy',
      'blocked_by_policy',
      false,
    ],
    [f('http_error', 'GET https://x.test/ answered 503', true), 'ServiceUnavailable', 'recoverable', true],
    [f('denied', 'the user rejected the call'), 'Denied', 'user_declined', false],
    [f('approval_expired', 'no decision in time'), 'ApprovalExpired', 'needs_user_confirmation', false],
    [
      f('execution_failed', 'GitHub answered 401 Unauthorized'),
      'BadCredentials',
      'needs_user_confirmation',
      false,
    ],
    [
      f('execution_failed', 'HTTP 403 Forbidden: missing scope repo'),
      'MissingPermission',
      'needs_user_confirmation',
      false,
    ],
    [f('execution_failed', 'connect ECONNREFUSED 10.0.0.1:443'), 'ServiceUnavailable', 'recoverable', true],
    [f('execution_failed', 'something odd happened'), 'ToolError', 'recoverable', false],
  ])('%o → %s / %s', (failure, cls, category, recoverable) => {
    const c = classifyToolFailure(failure);
    expect(c).toMatchObject({ class: cls, category, recoverable, causePlain: failure.message });
    expect(c.nextAction.length).toBeGreaterThan(0);
  });
});
