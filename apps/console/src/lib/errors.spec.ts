import { ApiError, apiErrorOf, describeError } from './errors';

describe('apiErrorOf', () => {
  it('reads the API error shape', () => {
    const e = apiErrorOf(409, {
      error: { code: 'agent_stopped', message: 'The agent is stopped.', details: { a: 1 } },
    });
    expect(e).toBeInstanceOf(ApiError);
    expect([e.status, e.code, e.message, e.details]).toEqual([
      409,
      'agent_stopped',
      'The agent is stopped.',
      { a: 1 },
    ]);
    expect(describeError(e)).toBe('The agent is stopped. (agent_stopped)');
  });

  it('names the status when the body is not the error shape', () => {
    const e = apiErrorOf(502, '<html>bad gateway</html>');
    expect([e.code, e.message]).toEqual(['http_502', 'The server answered 502.']);
  });
});
