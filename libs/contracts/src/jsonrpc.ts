import { z } from 'zod';
import { ApiSchemas } from './responses';

/**
 * A JSON-RPC 2.0 error response: the error body of the protocol adapters (`/mcp`, docs/adr/0036;
 * `/a2a/{agentId}`, docs/adr/0037) when a request is refused before its JSON-RPC method is read
 * (credentials, body, rate limit, unknown agent). `id` is null (the request was not read); the
 * gateway's own error code is in `error.data.code`.
 */
export const JsonRpcErrorResponse = z
  .strictObject({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number(), z.null()]),
    error: z.strictObject({
      /** -32700 parse error, -32600 invalid request, -32603 internal error. */
      code: z.int(),
      message: z.string(),
      data: z.strictObject({ code: z.string() }).optional(),
    }),
  })
  .register(ApiSchemas, { id: 'JsonRpcError' });
export type JsonRpcErrorResponse = z.infer<typeof JsonRpcErrorResponse>;
