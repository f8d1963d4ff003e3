import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { JsonRpcErrorResponse } from '@switchboard/contracts';
import { RATE_LIMIT_HEADERS, schemaRef } from './openapi';

/** A JSON-RPC 2.0 message (request, notification or response): the body of the MCP and A2A routes. */
export const JSON_RPC_MESSAGE_SCHEMA = {
  type: 'object',
  required: ['jsonrpc'],
  properties: {
    jsonrpc: { type: 'string', const: '2.0' },
    id: { type: ['string', 'number'] },
    method: { type: 'string' },
    params: { type: 'object' },
    result: {},
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} },
    },
  },
} as const;

/** The HTTP-level errors of a JSON-RPC route, each with a JSON-RPC error body (JsonRpcError). */
export const JsonRpcErrorResponses = (errors: readonly (readonly [number, string])[]) =>
  applyDecorators(
    ...errors.map(([status, description]) =>
      ApiResponse({
        status,
        description,
        schema: schemaRef(JsonRpcErrorResponse),
        ...(status === 429 ? { headers: RATE_LIMIT_HEADERS } : {}),
      }),
    ),
  );
