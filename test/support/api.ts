/** A small HTTP client for tests: raw status and JSON, nothing hidden. */
export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export class Api {
  constructor(
    readonly baseUrl: string,
    readonly key?: string,
  ) {}

  withKey(key: string): Api {
    return new Api(this.baseUrl, key);
  }

  async request<T = any>(
    method: string,
    path: string,
    options: { body?: unknown; raw?: string | Uint8Array; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (this.key && !('authorization' in headers)) headers.authorization = `Bearer ${this.key}`;
    let body: string | Uint8Array | undefined;
    if (options.raw !== undefined) body = options.raw;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  get = <T = any>(path: string, headers?: Record<string, string>) =>
    this.request<T>('GET', path, { headers });
  post = <T = any>(path: string, body?: unknown, headers?: Record<string, string>) =>
    this.request<T>('POST', path, { body, headers });
  patch = <T = any>(path: string, body?: unknown) => this.request<T>('PATCH', path, { body });
  put = <T = any>(path: string, body?: unknown) => this.request<T>('PUT', path, { body });
  delete = <T = any>(path: string) => this.request<T>('DELETE', path);
}

/** Creates a tenant through the admin API and returns a client holding its first key. */
export async function newTenant(
  baseUrl: string,
  adminToken: string,
  name = 'tenant',
): Promise<{ api: Api; tenantId: string; keyId: string }> {
  const res = await new Api(baseUrl).post(
    '/v1/admin/tenants',
    { name },
    { authorization: `Bearer ${adminToken}` },
  );
  if (res.status !== 201)
    throw new Error(`tenant creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    api: new Api(baseUrl, res.body.apiKey.key),
    tenantId: res.body.tenant.id,
    keyId: res.body.apiKey.id,
  };
}
