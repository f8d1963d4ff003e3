import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { RATE_LIMIT_HEADERS } from './openapi';

/** A JSON-RPC 2.0 error response (the MCP and A2A routes' errors, docs/adr/0036, 0037). */
export const JSON_RPC_ERROR_SCHEMA = {
  type: 'object',
  required: ['jsonrpc', 'id', 'error'],
  properties: {
    jsonrpc: { type: 'string', const: '2.0' },
    id: { type: ['string', 'number', 'null'] },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'integer', description: '-32700 parse error, -32600 invalid request, …' },
        message: { type: 'string' },
        data: {},
      },
    },
  },
} as const;

/** A JSON-RPC 2.0 message (request, notification or response), or a batch for MCP's POST. */
export const JSON_RPC_MESSAGE_SCHEMA = {
  type: 'object',
  required: ['jsonrpc'],
  properties: {
    jsonrpc: { type: 'string', const: '2.0' },
    id: { type: ['string', 'number'] },
    method: { type: 'string' },
    params: { type: 'object' },
  },
} as const;

/** The HTTP-level errors of a JSON-RPC route, each with a JSON-RPC error body. */
export const JsonRpcErrorResponses = (errors: readonly (readonly [number, string])[]) =>
  applyDecorators(
    ...errors.map(([status, description]) =>
      ApiResponse({
        status,
        description,
        content: { 'application/json': { schema: JSON_RPC_ERROR_SCHEMA as object } },
        ...(status === 429 ? { headers: RATE_LIMIT_HEADERS } : {}),
      }),
    ),
  );
