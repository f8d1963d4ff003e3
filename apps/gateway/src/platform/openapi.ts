import { ROUTE_SCOPES } from './auth/scopes';
import { applyDecorators } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import {
  ApiBearerAuth,
  ApiOperation,
  ApiResponse,
  ApiTags,
  DocumentBuilder,
  SwaggerModule,
  type OpenAPIObject,
} from '@nestjs/swagger';
import type { RequestBodyObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { cleanupOpenApiDoc } from 'nestjs-zod';
import { z } from 'zod';
import { ApiSchemas, ErrorResponse, OpenAiErrorResponse } from '@switchboard/contracts';
import { REQUEST_EXAMPLES } from '../api/examples';

/** Security scheme names in the OpenAPI document. */
export const API_KEY_AUTH = 'apiKey';
export const ADMIN_AUTH = 'adminToken';

/** Error statuses an operation can answer with; every one carries the `Error` body. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 500 | 503;

const ERROR_DESCRIPTIONS: Record<ErrorStatus, string> = {
  400: 'Invalid request: body, query, cursor or header failed validation, or the body is not JSON',
  401: 'Missing, invalid or revoked credentials',
  403:
    'The API key lacks the scope the route needs (`insufficient_scope`, docs/adr/0066; `details.scope` ' +
    'names it), or the operator paused the tenant (`tenant_paused`, docs/adr/0030): nothing is admitted ' +
    'until it is resumed; reads still work',
  404: 'No such object for the calling tenant',
  409: 'Conflicts with the current state (closed session, a turn already running, a request still in flight)',
  413: 'Request body larger than the limit',
  415: 'Body is not application/json',
  422: 'Idempotency-Key reused with a different body',
  429:
    "Rate limit exceeded (docs/adr/0028): the route's bucket is spent for the tenant, the API key or " +
    'the trigger; retry after Retry-After seconds',
  500: 'Unexpected failure (logged)',
  503: 'A dependency (Postgres, Redis) is unavailable: retry later',
};

const COMPONENTS = '#/components/schemas/';

/** `$ref` to a response schema registered in ApiSchemas (libs/contracts/src/responses.ts). */
export function schemaRef(schema: z.ZodType): { $ref: string } {
  const id = ApiSchemas.get(schema)?.id;
  if (!id) throw new Error('response schema is not registered in ApiSchemas');
  return { $ref: `${COMPONENTS}${id}` };
}

/** Documents error responses with the shared `Error` schema. */
export const ApiErrors = (...statuses: ErrorStatus[]) =>
  applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: ERROR_DESCRIPTIONS[status],
        schema: schemaRef(ErrorResponse),
        ...(status === 429 ? { headers: RATE_LIMIT_HEADERS } : {}),
      }),
    ),
  );

/** The headers of a 429 (draft-ietf-httpapi-ratelimit-headers-10 fields, and Retry-After). */
export const RATE_LIMIT_HEADERS = {
  'Retry-After': { description: 'Seconds until the quota has room again', schema: { type: 'integer' } },
  RateLimit: {
    description: 'The deciding policy\'s remaining quota and reset, e.g. `"admission";r=0;t=42`',
    schema: { type: 'string' },
  },
  'RateLimit-Policy': {
    description: 'The deciding policy: quota per window in seconds, e.g. `"admission";q=600;w=60`',
    schema: { type: 'string' },
  },
} as const;

/** A body-carrying request can also fail on its body: validation, size, media type. */
export const BODY_ERRORS: ErrorStatus[] = [400, 413, 415];

/** A controller whose routes need a tenant's API key. */
export const TenantApi = (tag: string) =>
  applyDecorators(ApiTags(tag), ApiBearerAuth(API_KEY_AUTH), ApiErrors(401, 403, 429, 500, 503));

/** A controller whose routes need ADMIN_TOKEN. */
export const AdminApi = (tag: string) =>
  applyDecorators(ApiTags(tag), ApiBearerAuth(ADMIN_AUTH), ApiErrors(401, 500, 503));

/**
 * An operation: readable operationId, a summary and a description, its success response from a zod
 * DTO, its own error statuses. test/e2e/openapi.e2e.spec.ts fails on an operation without a
 * description.
 */
export function Operation(o: {
  id: string;
  summary: string;
  /**
   * One to three sentences: what it does, whether a repeat is harmless (idempotency), how it pages,
   * and what it answers in the error cases that matter.
   */
  description?: string;
  status: number;
  /** The response schema (registered in ApiSchemas); omitted for an empty response (204). */
  schema?: z.ZodType;
  /** The success response's description (default: the summary). */
  response?: string;
  errors?: ErrorStatus[];
  /** A second success the request can ask for (admitMessage with `wait`: 200 with the ended turn). */
  alternative?: { status: number; schema: z.ZodType; description: string };
}) {
  return applyDecorators(
    ApiOperation({ operationId: o.id, summary: o.summary, description: o.description }),
    ApiResponse({
      status: o.status,
      description: o.response ?? o.summary,
      ...(o.schema ? { schema: schemaRef(o.schema) } : {}),
    }),
    ...(o.alternative
      ? [
          ApiResponse({
            status: o.alternative.status,
            description: o.alternative.description,
            schema: schemaRef(o.alternative.schema),
          }),
        ]
      : []),
    ApiErrors(...(o.errors ?? [])),
  );
}

/** The OpenAPI document served at /docs and /docs/openapi.json. */
export function createOpenApiDocument(app: NestFastifyApplication): OpenAPIObject {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      // 3.1: the schemas are JSON Schema 2020-12, as zod writes them (3.0's dialect cannot say
      // `exclusiveMinimum: 0` or `propertyNames`); validated in test/e2e/openapi.e2e.spec.ts.
      .setOpenAPIVersion('3.1.0')
      .setTitle('Switchboard API')
      .setDescription('Multi-tenant backend for tool-using LLM agent turns')
      .setVersion('v1')
      .addServer('/', 'This deployment (the document is served by the gateway it describes)')
      // addSecurity rather than addBearerAuth, whose default bearerFormat is "JWT".
      .addSecurity(API_KEY_AUTH, {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'API key',
        description: 'A tenant API key (`sb_` + 40 characters), shown once when created',
      })
      // The LangGraph adapter (docs/adr/0038) also takes the API key where its SDK sends it.
      .addSecurity('langgraphApiKey', {
        type: 'apiKey',
        in: 'header',
        name: 'x-api-key',
        description: 'A tenant API key in the `x-api-key` header (the LangGraph SDK’s), on /langgraph routes',
      })
      .addSecurity(ADMIN_AUTH, {
        type: 'http',
        scheme: 'bearer',
        description:
          "The deployment's ADMIN_TOKEN, for the admin API; on a tenant's routes too when the request names the tenant in `X-Switchboard-Tenant: <tenant id>` (it then runs as that tenant, audited as `operator`)",
      })
      .build(),
  );
  const cleaned = cleanupOpenApiDoc(document, { version: '3.1' });
  addRequestExamples(cleaned);
  addScopes(cleaned);
  cleaned.components = {
    ...cleaned.components,
    schemas: { ...cleaned.components?.schemas, ...responseComponents() },
  };
  return cleaned;
}

/**
 * Names on each tenant operation the scope its API key needs (`x-switchboard-scope`, from
 * ROUTE_SCOPES, docs/adr/0066); a JSON-RPC route's depends on the method (`by JSON-RPC method`).
 */
function addScopes(document: OpenAPIObject): void {
  for (const [key, rule] of Object.entries(ROUTE_SCOPES)) {
    const [method, path] = key.split(' ');
    const item = document.paths[path.replace(/:([A-Za-z_]+)/g, '{$1}')] as
      Record<string, Record<string, unknown> | undefined> | undefined;
    const op = item?.[method.toLowerCase()];
    if (op) op['x-switchboard-scope'] = typeof rule === 'string' ? rule : 'by JSON-RPC method';
  }
}

/**
 * Sets each JSON request body's `example` from REQUEST_EXAMPLES, by the DTO its schema refers to
 * (the component named after the DTO class), so the Swagger UI's "Try it out" starts from it.
 */
function addRequestExamples(document: OpenAPIObject): void {
  const examples = new Map(REQUEST_EXAMPLES.map((e) => [`${COMPONENTS}${e.dto.name}`, e.value]));
  for (const item of Object.values(document.paths)) {
    for (const op of Object.values(item) as { requestBody?: RequestBodyObject }[]) {
      const json = op?.requestBody?.content?.['application/json'];
      const ref = (json?.schema as { $ref?: string } | undefined)?.$ref;
      if (json && ref && examples.has(ref)) json.example = examples.get(ref);
    }
  }
}

/** Every response schema as an OpenAPI 3.1 component (JSON Schema 2020-12), `$ref`s between them by name. */
function responseComponents(): Record<string, object> {
  const { schemas } = z.toJSONSchema(ApiSchemas, {
    target: 'draft-2020-12',
    io: 'output',
    uri: (id) => `${COMPONENTS}${id}`,
  });
  // The component's name identifies it; `$id` and `$schema` would make each its own document.
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $id: _, $schema: __, ...schema }]) => [id, schema]),
  );
}

/**
 * The error responses of an OpenAI-compatible route, each in OpenAI's error shape (the route declares
 * `ErrorShapeOf('openai')`), 429 with the rate-limit headers.
 */
export const OpenAiErrorResponses = (errors: readonly (readonly [number, string])[]) =>
  applyDecorators(
    ...errors.map(([status, description]) =>
      ApiResponse({
        status,
        description,
        schema: schemaRef(OpenAiErrorResponse),
        ...(status === 429 ? { headers: RATE_LIMIT_HEADERS } : {}),
      }),
    ),
  );
