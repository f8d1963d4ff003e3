import type { ArgumentsHost } from '@nestjs/common';
import { AppError } from '@switchboard/contracts';
import { LangGraphError, OpenAiError } from '@switchboard/protocols';
import { ErrorFilter, ErrorShapes, toErrorAnswer } from './errors';
import { protocolErrorShapes } from '../protocols/error-shapes';

const logger = { error: jest.fn(), warn: jest.fn(), info: jest.fn() } as never;
const native = (e: unknown) => toErrorAnswer(e, logger);

/** What the filter sends for `err` on a route of error shape `shape` (none: the gateway's own). */
function filtered(shapes: ErrorShapes, err: unknown, shape?: string) {
  const sent: { status?: number; headers?: Record<string, string>; body?: unknown } = {};
  const reply = {
    status: (s: number) => ((sent.status = s), reply),
    headers: (h: Record<string, string>) => ((sent.headers = h), reply),
    send: (b: unknown) => ((sent.body = b), reply),
  };
  const req = { routeOptions: { config: shape === undefined ? {} : { errorShape: shape } } };
  const host = {
    switchToHttp: () => ({ getResponse: () => reply, getRequest: () => req }),
  } as unknown as ArgumentsHost;
  new ErrorFilter(logger, shapes).catch(err, host);
  return sent;
}

describe('ErrorShapes', () => {
  it('answers in the shape a protocol added, and in the gateway’s own for any other name', () => {
    const shapes = new ErrorShapes().add('teapot', (err, n) => ({ ...n(err), body: { tea: true } }));
    const err = new AppError('not_found', 'no such agent');
    expect(shapes.answer('teapot', err, native)).toEqual({ status: 404, headers: {}, body: { tea: true } });
    expect(shapes.answer('switchboard', err, native)).toEqual(native(err));
    expect(shapes.answer('nobody-added-this', err, native)).toEqual(native(err));
  });

  it('refuses a name twice, and the gateway’s own name', () => {
    const shapes = new ErrorShapes().add('x', (err, n) => n(err));
    expect(() => shapes.add('x', (err, n) => n(err))).toThrow('error shape x is taken');
    expect(() => shapes.add('switchboard', (err, n) => n(err))).toThrow('taken');
  });

  it('has every shape a route names: openai, jsonrpc, langgraph', () => {
    const shapes = protocolErrorShapes();
    for (const name of ['openai', 'jsonrpc', 'langgraph']) expect(shapes.has(name)).toBe(true);
  });
});

describe('ErrorFilter over the protocols’ shapes', () => {
  const shapes = protocolErrorShapes();
  const unauthorized = new AppError('unauthorized', 'invalid or revoked API key');

  it('answers a route without a shape in the gateway’s own', () => {
    expect(filtered(shapes, unauthorized)).toMatchObject({
      status: 401,
      body: { error: { code: 'unauthorized', message: 'invalid or revoked API key' } },
    });
  });

  it('answers an openai route in OpenAI’s shape, its own errors as they are', () => {
    expect(filtered(shapes, unauthorized, 'openai')).toMatchObject({
      status: 401,
      body: { error: { type: 'authentication_error', code: 'invalid_api_key', param: null } },
    });
    expect(filtered(shapes, new OpenAiError(408, 'turn_timeout', 'late'), 'openai')).toMatchObject({
      status: 408,
      body: { error: { code: 'turn_timeout', type: 'timeout_error' } },
    });
  });

  it('answers a jsonrpc route with a JSON-RPC error response, the HTTP status kept', () => {
    expect(filtered(shapes, unauthorized, 'jsonrpc')).toMatchObject({
      status: 401,
      body: { jsonrpc: '2.0', id: null, error: { code: -32600, data: { code: 'unauthorized' } } },
    });
    expect(filtered(shapes, new AppError('invalid_json', 'bad'), 'jsonrpc')).toMatchObject({
      body: { error: { code: -32700 } },
    });
  });

  it('answers a langgraph route with {detail}; a validation failure is 422', () => {
    expect(filtered(shapes, new LangGraphError(409, 'busy'), 'langgraph')).toMatchObject({
      status: 409,
      body: { detail: 'busy' },
    });
    expect(
      filtered(shapes, new AppError('validation_failed', 'limit: too small'), 'langgraph'),
    ).toMatchObject({
      status: 422,
      body: { detail: 'limit: too small' },
    });
  });
});
