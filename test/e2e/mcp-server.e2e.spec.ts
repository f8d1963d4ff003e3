import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createTestEnv,
  FakeLlmServer,
  ROOT,
  runProcess,
  spawnApp,
  spawnGateway,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

/**
 * `/mcp` with the official MCP SDK client (docs/adr/0036), through real processes (a gateway and a
 * harness worker): the tenant's agents are tools, a call admits a turn and answers with its text.
 * Both protocol eras: 2025-11-25 (SDK v1's client, SDK v2's in its default legacy mode) and
 * 2026-07-28 (SDK v2's client pinned or in `auto`, and the MCP Inspector CLI with `--protocol-era`).
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

/** The last user message a model request carried. */
const lastUser = (r: RecordedRequest): string => {
  const messages = (r.body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
};

describe('MCP server (/mcp) with the official MCP SDK client', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let other: Api;
  let helperId: string;
  const clients: (Client | ModernClient)[] = [];

  /** A connected MCP client with this bearer. */
  async function mcp(key: string): Promise<Client> {
    const client = new Client({ name: 'switchboard-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
    clients.push(client);
    return client;
  }

  /** SDK v2's client: `{ pin: '2026-07-28' }`, `auto` (probe with server/discover) or `legacy`. */
  async function modernMcp(
    key: string,
    mode: 'legacy' | 'auto' | { pin: '2026-07-28' } = { pin: '2026-07-28' },
  ): Promise<ModernClient> {
    const client = new ModernClient(
      { name: 'switchboard-e2e-modern', version: '1.0.0' },
      { versionNegotiation: { mode } },
    );
    await client.connect(
      new ModernTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
    clients.push(client);
    return client;
  }

  /** The turns of an agent's sessions, from the public API (message_admitted events). */
  async function turnsOf(agentId: string): Promise<string[]> {
    const sessions = (await api.get('/v1/sessions?limit=200')).body.data as { id: string; agentId: string }[];
    const turns: string[] = [];
    for (const s of sessions.filter((x) => x.agentId === agentId)) {
      const events = (await api.get(`/v1/sessions/${s.id}/events`)).body.data as {
        type: string;
        turnId: string;
      }[];
      turns.push(...events.filter((e) => e.type === 'message_admitted').map((e) => e.turnId));
    }
    return turns;
  }

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((r) => {
      const text = lastUser(r);
      if (text.startsWith('stall'))
        return { kind: 'message', text: 'thinking about it', stallAfterFrames: 2 };
      if (text.startsWith('slow')) {
        return { kind: 'message', text: 'a slow and careful answer', textPieces: 5, frameIntervalMs: 150 };
      }
      // `count …`: a word_count call first (an agent that needs approval for it pauses there).
      const toolResult = ((r.body as { messages?: { role: string }[] }).messages ?? []).some(
        (m) => m.role === 'tool',
      );
      if (text.startsWith('count') && !toolResult) {
        return { kind: 'message', toolCalls: [{ name: 'word_count', arguments: JSON.stringify({ text }) }] };
      }
      return { kind: 'message', text: `echo: ${text}` };
    });
    const [gateway, harness] = await Promise.all([
      spawnGateway(env.processEnv(llm.providerEnv)),
      spawnApp('harness-worker', env.processEnv(llm.providerEnv)),
    ]);
    processes.push(gateway, harness);
    url = gateway.url;
    ({ api } = await newTenant(url, ADMIN));
    ({ api: other } = await newTenant(url, ADMIN, 'other'));
    const helper = await api.post('/v1/agents', {
      name: 'Research helper!',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'Answer research questions briefly.',
    });
    expect(helper.status).toBe(201);
    helperId = helper.body.id;
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it("lists the tenant's agents as tools, named after them, with the message/session_id input", async () => {
    const client = await mcp(api.key!);
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t._meta?.['switchboard/agent_id'] === helperId);
    expect(tool).toMatchObject({
      name: 'Research_helper',
      title: 'Research helper!',
      description: expect.stringContaining('Answer research questions briefly.'),
      inputSchema: {
        type: 'object',
        properties: { message: { type: 'string' }, session_id: { type: 'string' } },
        required: ['message'],
      },
    });
    // Another tenant's client sees none of them.
    const theirs = await mcp(other.key!);
    expect((await theirs.listTools()).tools).toEqual([]);
  });

  it('calls an agent: the answer text, then the same session continued with session_id', async () => {
    const client = await mcp(api.key!);
    const first = (await client.callTool({
      name: 'Research_helper',
      arguments: { message: 'what is MCP?' },
    })) as CallToolResult;
    expect(first.isError).toBeFalsy();
    expect(first.content).toEqual([{ type: 'text', text: 'echo: what is MCP?' }]);
    const { session_id: sessionId, turn_id: turnId } = first.structuredContent as Record<string, string>;
    expect((await api.get(`/v1/turns/${turnId}`)).body).toMatchObject({
      status: 'completed',
      sessionId,
      agentId: helperId,
      finalText: 'echo: what is MCP?',
    });

    const before = llm.requests.length;
    const second = (await client.callTool({
      name: 'Research_helper',
      arguments: { message: 'and A2A?', session_id: sessionId },
    })) as CallToolResult;
    expect(second.content).toEqual([{ type: 'text', text: 'echo: and A2A?' }]);
    expect(second.structuredContent).toMatchObject({ session_id: sessionId, status: 'completed' });
    // The model saw the earlier exchange: the session was continued.
    const sent = JSON.stringify((llm.requests[before].body as { messages: unknown[] }).messages);
    expect(sent).toContain('what is MCP?');
    expect(sent).toContain('echo: what is MCP?');
  });

  it('reports progress notifications from the live stream for a slow reply', async () => {
    const client = await mcp(api.key!);
    const progress: Progress[] = [];
    const result = (await client.callTool(
      { name: 'Research_helper', arguments: { message: 'slow: tell me everything' } },
      undefined,
      { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true },
    )) as CallToolResult;
    expect(result.content).toEqual([{ type: 'text', text: 'a slow and careful answer' }]);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    // Increasing, and at least one tells of the text being written.
    expect(progress.map((p) => p.progress)).toEqual(
      [...progress.map((p) => p.progress)].sort((a, b) => a - b),
    );
    expect(progress.some((p) => p.message?.startsWith('writing: '))).toBe(true);
  });

  it("cancelling a call cancels the agent's turn", async () => {
    const agent = await api.post('/v1/agents', { name: 'staller', model: 'openai-chat/gpt-4o-mini' });
    const client = await mcp(api.key!);
    const abort = new AbortController();
    const before = llm.requests.length;
    const call = client.callTool({ name: 'staller', arguments: { message: 'stall here' } }, undefined, {
      signal: abort.signal,
    });
    await llm.waitForRequests(before + 1);
    const [turnId] = await waitFor(async () => {
      const t = await turnsOf(agent.body.id);
      return t.length > 0 ? t : undefined;
    });
    abort.abort('changed my mind');
    await expect(call).rejects.toThrow();
    const turn = await waitFor(
      async () => {
        const t = (await api.get(`/v1/turns/${turnId}`)).body;
        return t.status === 'cancelled' ? t : undefined;
      },
      { what: 'the turn to be cancelled', timeoutMs: 60_000 },
    );
    expect(turn.stopReason).toBe('cancelled');
    // The client's notifications/cancelled (on its own POST, to a fresh stateless server) found the
    // turn through the call registry: an API cancel, its reason journaled as the note (docs/adr/0055).
    const events = (await api.get(`/v1/sessions/${turn.sessionId}/events`)).body.data as {
      type: string;
      data: { reason?: string; note?: string };
    }[];
    const ended = events.find((e) => e.type === 'turn_cancelled')?.data;
    expect(ended?.reason).toBe('api_cancel');
    expect(ended?.note).toContain('changed my mind');
    expect(turn.cancelReason).toBe('api_cancel');
  });

  it('a client that drops the connection mid-call cancels the turn (the request’s abort)', async () => {
    const agent = await api.post('/v1/agents', { name: 'dropper', model: 'openai-chat/gpt-4o-mini' });
    const abort = new AbortController();
    const before = llm.requests.length;
    const pending = fetch(`${url}/mcp`, {
      method: 'POST',
      signal: abort.signal,
      headers: {
        authorization: `Bearer ${api.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'dropper', arguments: { message: 'stall and wait' } },
      }),
    }).then((r) => r.text());
    await llm.waitForRequests(before + 1);
    const [turnId] = await waitFor(async () => {
      const t = await turnsOf(agent.body.id);
      return t.length > 0 ? t : undefined;
    });
    abort.abort();
    await expect(pending).rejects.toThrow();
    const turn = await waitFor(
      async () => {
        const t = (await api.get(`/v1/turns/${turnId}`)).body;
        return t.status === 'cancelled' ? t : undefined;
      },
      { what: 'the turn to be cancelled', timeoutMs: 60_000 },
    );
    const events = (await api.get(`/v1/sessions/${turn.sessionId}/events`)).body.data as {
      type: string;
      data: { reason?: string; note?: string };
    }[];
    // The client left: client_disconnected (docs/adr/0055).
    expect(events.find((e) => e.type === 'turn_cancelled')?.data).toMatchObject({
      reason: 'client_disconnected',
      note: 'the MCP tool call was closed',
    });
  });

  it('a turn paused for an approval answers the call (isError, awaiting_approval), progress included', async () => {
    await api.post('/v1/agents', {
      name: 'gated',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['word_count'],
      approvalRequired: ['word_count'],
    });
    const client = await mcp(api.key!);
    const progress: Progress[] = [];
    const result = (await client.callTool(
      { name: 'gated', arguments: { message: 'count these words' } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    )) as CallToolResult;
    expect(result).toMatchObject({
      isError: true,
      structuredContent: { status: 'awaiting_approval' },
      content: [{ type: 'text', text: expect.stringContaining('approve') }],
    });
    expect(progress.map((p) => p.message)).toContain('waiting for a person to approve a tool call');
  });

  it("another tenant's session id is a tool error, and nothing is admitted", async () => {
    const theirSession = await other.post('/v1/sessions', {
      agentId: (await other.post('/v1/agents', { name: 'theirs', model: 'openai-chat/gpt-4o-mini' })).body.id,
    });
    expect(theirSession.status).toBe(201);
    const client = await mcp(api.key!);
    const before = llm.requests.length;
    const turnsBefore = (await turnsOf(helperId)).length;
    const result = (await client.callTool({
      name: 'Research_helper',
      arguments: { message: 'sneak in', session_id: theirSession.body.id },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: expect.stringContaining('not found') }]);
    expect((await other.get(`/v1/sessions/${theirSession.body.id}/events`)).body.data).toEqual([]);
    expect((await turnsOf(helperId)).length).toBe(turnsBefore);
    expect(llm.requests.length).toBe(before);

    // Bad arguments and unknown tools are tool errors too, not transport errors.
    const bad = (await client.callTool({
      name: 'Research_helper',
      arguments: { message: '' },
    })) as CallToolResult;
    expect(bad).toMatchObject({ isError: true });
    const unknown = (await client.callTool({
      name: 'nobody',
      arguments: { message: 'hi' },
    })) as CallToolResult;
    expect(unknown).toMatchObject({ isError: true });
  });

  it('a wrong API key is refused with 401; GET (no server stream) with 405', async () => {
    await expect(mcp('sb_not-a-key')).rejects.toMatchObject({ code: 401 });
    const noKey = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    const get = await fetch(`${url}/mcp`, { headers: { authorization: `Bearer ${api.key}` } });
    expect(get.status).toBe(405);
    const badJson = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${api.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{"jsonrpc":',
    });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 } });
  });
  describe('revision 2026-07-28 beside 2025-11-25', () => {
    /** A raw modern POST: the `_meta` envelope and the headers 2026-07-28 requires, overridable. */
    const modernPost = (
      method: string,
      params: Record<string, unknown>,
      o: { version?: string; headers?: Record<string, string>; meta?: Record<string, unknown> } = {},
    ) =>
      fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${api.key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': o.version ?? '2026-07-28',
          'mcp-method': method,
          ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
          ...o.headers,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 41,
          method,
          params: {
            ...params,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': o.version ?? '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
              ...o.meta,
            },
          },
        }),
      });

    it('a client pinned to 2026-07-28 discovers the server (server/discover), lists and calls agents, progress included', async () => {
      const client = await modernMcp(api.key!);
      expect(client.getProtocolEra()).toBe('modern');
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const discovered = client.getDiscoverResult();
      expect(discovered?.supportedVersions).toContain('2026-07-28');
      expect(discovered?.capabilities.tools).toBeDefined();
      expect(client.getServerVersion()).toMatchObject({ name: 'switchboard' });

      const { tools } = await client.listTools();
      expect(tools.find((t) => t._meta?.['switchboard/agent_id'] === helperId)).toMatchObject({
        name: 'Research_helper',
        inputSchema: { type: 'object', required: ['message'] },
      });
      // Another tenant's modern client sees none of them.
      const theirs = (await (await modernMcp(other.key!)).listTools()).tools;
      expect(theirs.map((t) => t._meta?.['switchboard/agent_id'])).not.toContain(helperId);
      expect(theirs.map((t) => t.name)).not.toContain('Research_helper');

      const progress: Progress[] = [];
      const first = await client.callTool(
        { name: 'Research_helper', arguments: { message: 'slow: modern times' } },
        { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true },
      );
      expect(first.isError).toBeFalsy();
      expect(first.content).toEqual([{ type: 'text', text: 'a slow and careful answer' }]);
      expect(progress.some((p) => p.message?.startsWith('writing: '))).toBe(true);
      const { session_id: sessionId, turn_id: turnId } = first.structuredContent as Record<string, string>;
      expect((await api.get(`/v1/turns/${turnId}`)).body).toMatchObject({ status: 'completed', sessionId });

      const second = await client.callTool({
        name: 'Research_helper',
        arguments: { message: 'and then?', session_id: sessionId },
      });
      expect(second.content).toEqual([{ type: 'text', text: 'echo: and then?' }]);
      expect(second.structuredContent).toMatchObject({ session_id: sessionId, status: 'completed' });

      // A tool error is a result in this revision too.
      expect(await client.callTool({ name: 'nobody', arguments: { message: 'hi' } })).toMatchObject({
        isError: true,
      });
    });

    it('auto negotiates 2026-07-28; the default (legacy) SDK v2 client and the v1 client keep 2025-11-25', async () => {
      const auto = await modernMcp(api.key!, 'auto');
      expect(auto.getProtocolEra()).toBe('modern');
      expect(auto.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      expect(
        (await auto.callTool({ name: 'Research_helper', arguments: { message: 'auto pilot' } })).content,
      ).toEqual([{ type: 'text', text: 'echo: auto pilot' }]);

      const legacy = await modernMcp(api.key!, 'legacy');
      expect(legacy.getProtocolEra()).toBe('legacy');
      expect(legacy.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      expect(
        (await legacy.callTool({ name: 'Research_helper', arguments: { message: 'old school' } })).content,
      ).toEqual([{ type: 'text', text: 'echo: old school' }]);

      const v1 = await mcp(api.key!);
      expect(v1.getServerVersion()).toMatchObject({ name: 'switchboard' });
      expect((await v1.listTools()).tools.map((t) => t.name)).toContain('Research_helper');
    });

    it('a 2026-07-28 client that abandons a call (its stream closed) cancels the turn', async () => {
      const agent = await api.post('/v1/agents', {
        name: 'modern_staller',
        model: 'openai-chat/gpt-4o-mini',
      });
      const client = await modernMcp(api.key!);
      const abort = new AbortController();
      const before = llm.requests.length;
      const call = client.callTool(
        { name: 'modern_staller', arguments: { message: 'stall for modern times' } },
        { signal: abort.signal },
      );
      await llm.waitForRequests(before + 1);
      const [turnId] = await waitFor(async () => {
        const t = await turnsOf(agent.body.id);
        return t.length > 0 ? t : undefined;
      });
      abort.abort('no longer needed');
      await expect(call).rejects.toThrow();
      const turn = await waitFor(
        async () => {
          const t = (await api.get(`/v1/turns/${turnId}`)).body;
          return t.status === 'cancelled' ? t : undefined;
        },
        { what: 'the turn to be cancelled', timeoutMs: 60_000 },
      );
      expect(turn.stopReason).toBe('cancelled');
    });

    it('bad modern requests are JSON-RPC errors (400) and admit nothing', async () => {
      const before = llm.requests.length;
      const turnsBefore = (await turnsOf(helperId)).length;
      const call = { name: 'Research_helper', arguments: { message: 'should never run' } };

      // A revision the server does not speak: UnsupportedProtocolVersionError naming what it does.
      const unknown = await modernPost('tools/call', call, { version: '1900-01-01' });
      expect(unknown.status).toBe(400);
      expect(await unknown.json()).toMatchObject({
        jsonrpc: '2.0',
        id: 41,
        error: {
          code: -32022,
          data: { requested: '1900-01-01', supported: expect.arrayContaining(['2026-07-28']) },
        },
      });

      // The header says one revision, the body another; the Mcp-Name header another tool; no Mcp-Method.
      const mismatch = await modernPost('tools/call', call, {
        headers: { 'mcp-protocol-version': '2025-11-25' },
      });
      expect(mismatch.status).toBe(400);
      expect(((await mismatch.json()) as { error: { code: number } }).error.code).toBe(-32020);
      const wrongName = await modernPost('tools/call', call, { headers: { 'mcp-name': 'someone_else' } });
      expect(wrongName.status).toBe(400);
      expect(((await wrongName.json()) as { error: { code: number } }).error.code).toBe(-32020);
      const noMethodHeader = await modernPost('tools/call', call, {
        headers: { 'mcp-method': 'tools/list' },
      });
      expect(noMethodHeader.status).toBe(400);
      expect(((await noMethodHeader.json()) as { error: { code: number } }).error.code).toBe(-32020);

      // A malformed discover: client capabilities that are not an object.
      const malformed = await modernPost(
        'server/discover',
        {},
        { meta: { 'io.modelcontextprotocol/clientCapabilities': 'all of them' } },
      );
      expect(malformed.status).toBe(400);
      expect(await malformed.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32602 } });

      // A method the server does not have: 404 with -32601 (what tells a modern server from an old one).
      const missing = await modernPost('prompts/list', {});
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { error: { code: number } }).error.code).toBe(-32601);

      expect(llm.requests.length).toBe(before);
      expect((await turnsOf(helperId)).length).toBe(turnsBefore);

      // The well-formed discover answers, with both revisions and the tools capability.
      const discover = await modernPost('server/discover', {});
      expect(discover.status).toBe(200);
      // Only the modern revisions: 2025-11-25 is negotiated by `initialize`, as before. Per tenant: private.
      expect(await discover.json()).toMatchObject({
        result: {
          supportedVersions: ['2026-07-28'],
          capabilities: { tools: {} },
          resultType: 'complete',
          cacheScope: 'private',
          _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'switchboard' } },
        },
      });
    });

    it('the MCP Inspector CLI passes with --protocol-era modern and auto (and legacy)', async () => {
      const home = await mkdtemp(join(tmpdir(), 'sb-inspector-'));
      // Its catalog, client config and OAuth store under a throwaway HOME; no browser, no network but the gateway.
      const inspector = (era: string, ...args: string[]) =>
        runProcess(
          join(ROOT, 'node_modules/.bin/mcp-inspector'),
          [
            '--cli',
            `${url}/mcp`,
            '--transport',
            'http',
            '--protocol-era',
            era,
            '--header',
            `Authorization: Bearer ${api.key}`,
            '--stored-auth-only',
            '--format',
            'json',
            ...args,
          ],
          {
            env: {
              ...process.env,
              HOME: home,
              MCP_CATALOG_PATH: join(home, 'mcp.json'),
              MCP_CLIENT_CONFIG_PATH: join(home, 'client.json'),
            },
            timeoutMs: 60_000,
          },
        );
      try {
        // modern: pinned to 2026-07-28, no fallback; auto: server/discover first; legacy: initialize.
        const runs: ['modern' | 'auto' | 'legacy', string, string[]][] = [
          ['modern', '2026-07-28', ['tools/list', 'tools/call']],
          ['auto', '2026-07-28', ['tools/call']],
          ['legacy', '2025-11-25', []],
        ];
        for (const [era, version, methods] of runs) {
          const init = await inspector(era, '--method', 'initialize');
          expect({ era, code: init.code, stderr: init.stderr }).toMatchObject({ era, code: 0 });
          // `--format json`: the connection as one object (under `result`, or bare).
          const connected = JSON.parse(init.stdout) as {
            protocolVersion?: string;
            result?: { protocolVersion?: string };
          };
          expect(connected.result?.protocolVersion ?? connected.protocolVersion).toBe(version);
          if (methods.includes('tools/list')) {
            const list = await inspector(era, '--method', 'tools/list');
            expect(list.code).toBe(0);
            expect(list.stdout).toContain('Research_helper');
          }
          if (methods.includes('tools/call')) {
            const called = await inspector(
              era,
              '--method',
              'tools/call',
              '--tool-name',
              'Research_helper',
              '--tool-args-json',
              JSON.stringify({ message: `inspector ${era}` }),
            );
            expect({ era, code: called.code, stderr: called.stderr }).toMatchObject({ era, code: 0 });
            expect(called.stdout).toContain(`echo: inspector ${era}`);
          }
        }
      } finally {
        await rm(home, { recursive: true, force: true });
      }
      // Each run starts a Node process of its own: slow on a loaded machine.
    }, 300_000);
  });
});
