import {
  ErrorResponse,
  JsonRpcErrorResponse,
  LangGraphErrorResponse,
  OpenAiErrorResponse,
} from '@switchboard/contracts';

/**
 * Walking the gateway's OpenAPI document, for the suites generated from it (the isolation suite,
 * test/e2e/isolation.e2e.spec.ts, and the agent-narrowing suite, test/e2e/agent-narrowing.e2e.spec.ts):
 * its operations, the ids each takes (path, query, request example) and the request that fills them.
 * Which operations a suite calls, and how, stays in the suite's own table.
 */

/** A kind of object whose id appears in the API (`agent`, `session`, …). */
export type IdKind = string;

/** One operation of the document, with its method and path. */
export interface OpenApiOperation {
  operationId: string;
  method: string;
  path: string;
  parameters?: { name: string; in: string }[];
  requestBody?: { content?: Record<string, { example?: unknown }> };
}

export const OPENAPI_METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Every operation of an OpenAPI document, in the document's order (`T`: the fields the caller reads). */
export function listOperations<T extends OpenApiOperation = OpenApiOperation>(doc: {
  paths: Record<string, Record<string, any>>;
}): T[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => OPENAPI_METHODS.includes(method))
      .map(([method, op]) => ({ ...op, method, path }) as T),
  );
}

/** The names of the path's `{param}`s, in order. */
export const pathParams = (o: OpenApiOperation) => [...o.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);

/** The document's example JSON request body of the operation. */
export const requestExample = (o: OpenApiOperation) => o.requestBody?.content?.['application/json']?.example;

/** A request built for an operation: its path (with the query) and JSON body. */
export interface OperationRequest {
  path: string;
  body?: unknown;
}

/**
 * The id walker for a suite's vocabulary: `kinds` says which kind of id a `{param}` is by the path
 * segment in front of it (`/v1/agents/{id}` → agent), `fields` which query and body fields carry an id.
 */
export function openApiIds(kinds: Record<string, IdKind>, fields: Record<string, IdKind>) {
  /** The kind of a path `{param}`, by the segment in front of it; undefined for a segment not in `kinds`. */
  const kindOf = (o: OpenApiOperation, param: string): IdKind | undefined => {
    const segments = o.path.split('/');
    return kinds[segments[segments.indexOf(`{${param}}`) - 1]];
  };
  /** The query parameters that carry an id. */
  const idQuery = (o: OpenApiOperation) =>
    (o.parameters ?? []).filter((p) => p.in === 'query' && p.name in fields).map((p) => p.name);
  /** The id fields of a value (a request example), at any depth. */
  const idFields = (value: unknown): string[] =>
    value && typeof value === 'object'
      ? Object.entries(value).flatMap(([k, v]) => [...(k in fields ? [k] : []), ...idFields(v)])
      : [];
  /** Takes an id: in its path, an id field of its query, or an id field of its request example. */
  const takesId = (o: OpenApiOperation) =>
    pathParams(o).length > 0 || idQuery(o).length > 0 || idFields(requestExample(o)).length > 0;
  /** Replaces every id field of a request example with the id `id` gives for its kind. */
  const fill = (value: unknown, id: (k: IdKind) => string): unknown => {
    if (Array.isArray(value)) return value.map((v) => fill(v, id));
    if (!value || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        k in fields && typeof v === 'string' ? id(fields[k]) : fill(v, id),
      ]),
    );
  };
  /**
   * The request for `o` with each id taken from `id`: the path's `{param}`s (from `pathId` where the
   * path's ids differ), the id fields of the query (after the fixed `query`), and the body: `body`'s
   * where the suite gives one, else the document's example with its id fields filled.
   */
  const request = (
    o: OpenApiOperation,
    id: (k: IdKind) => string,
    opts: {
      pathId?: (k: IdKind, param: string) => string;
      query?: Record<string, string>;
      body?: () => unknown;
    } = {},
  ): OperationRequest => {
    const pathId = opts.pathId ?? id;
    let path = o.path.replace(/\{(\w+)\}/g, (_, p: string) => encodeURIComponent(pathId(kindOf(o, p)!, p)));
    const query = new URLSearchParams(opts.query ?? {});
    for (const name of idQuery(o)) query.set(name, id(fields[name]));
    if ([...query].length > 0) path += `?${query.toString()}`;
    const example = requestExample(o);
    const body = opts.body?.() ?? (example !== undefined ? fill(example, id) : undefined);
    return { path, body };
  };
  return { kindOf, idQuery, idFields, takesId, fill, request };
}

/** The OpenAI-compatible operations: their errors are in OpenAI's shape. */
export const OPENAI_OPERATIONS = [
  'createChatCompletion',
  'listModels',
  'retrieveModel',
  'createResponse',
  'compactResponse',
  'getResponse',
  'cancelResponse',
  'listResponseInputItems',
];

/**
 * What is wrong with an error answer for its operation's family (LangGraph, OpenAI, JSON-RPC, the
 * API's own), undefined when nothing is; in the API's own shape the code must be `not_found` unless
 * `anyCode`.
 */
export function errorShapeProblem(o: OpenApiOperation, body: unknown, anyCode = false): string | undefined {
  if (o.path.startsWith('/langgraph/'))
    return LangGraphErrorResponse.safeParse(body).success ? undefined : 'not a LangGraph {detail} error';
  if (OPENAI_OPERATIONS.includes(o.operationId))
    return OpenAiErrorResponse.safeParse(body).success ? undefined : 'not an OpenAI error';
  if (o.path === '/mcp' || o.path.startsWith('/a2a/'))
    return JsonRpcErrorResponse.safeParse(body).success ? undefined : 'not a JSON-RPC error';
  const parsed = ErrorResponse.safeParse(body);
  if (!parsed.success) return 'not the API error shape';
  return anyCode || parsed.data.error.code === 'not_found'
    ? undefined
    : `code ${parsed.data.error.code}, not not_found`;
}

/**
 * Sends a built request to the gateway at `baseUrl` and reads the answer (JSON where it is, else the
 * text). An event stream that opened is noted and hung up on rather than followed; MCP's (`/mcp`,
 * Streamable HTTP) answer is read from its `data:` line.
 */
export async function sendOperation(
  baseUrl: string,
  c: { o: Pick<OpenApiOperation, 'method' | 'path'> } & OperationRequest,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  const mcp = c.o.path === '/mcp';
  const ac = new AbortController();
  const res = await fetch(`${baseUrl}${c.path}`, {
    method: c.o.method.toUpperCase(),
    headers: {
      ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(mcp ? { accept: 'application/json, text/event-stream' } : {}),
      ...headers,
    },
    body: c.body === undefined ? undefined : JSON.stringify(c.body),
    signal: ac.signal,
  });
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream') && !mcp) {
    ac.abort();
    return { status: res.status, body: '<an open event stream>' };
  }
  const text = await res.text();
  const data = mcp ? (text.match(/^data: (.*)$/m)?.[1] ?? text) : text;
  try {
    return { status: res.status, body: data ? (JSON.parse(data) as unknown) : undefined };
  } catch {
    return { status: res.status, body: text };
  }
}

/**
 * A hash of each table's rows that `where` selects (`''` for all), from one statement: a suite takes
 * one before and one after its calls, and any table whose hash moved was written.
 */
export async function tableHashes(
  db: { $queryRawUnsafe<T>(query: string): Promise<T> },
  tables: { name: string; where: string }[],
): Promise<Record<string, string>> {
  const rows = await db.$queryRawUnsafe<{ name: string; h: string }[]>(
    tables
      .map(
        (t) =>
          `SELECT '${t.name}' AS name, md5(coalesce(string_agg(md5(x::text), ',' ORDER BY md5(x::text)), '')) AS h
             FROM "${t.name}" x ${t.where}`,
      )
      .join(' UNION ALL '),
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.h]));
}
