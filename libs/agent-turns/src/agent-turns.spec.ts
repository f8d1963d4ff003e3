import type { Admission, SessionImport, SessionImportResult } from '@switchboard/admission';
import type { Config } from '@switchboard/config';
import type { TurnResponse } from '@switchboard/contracts';
import type { LiveWatch } from '@switchboard/live';
import type { SessionsRepository, SqlDb } from '@switchboard/store';
import type { AgentsRepository } from '@switchboard/subagents';
import { AgentTurns, SessionRefused, type SessionRefusal } from './agent-turns';
import type { EventStreams } from './event-streams';
import { sessionIdForKey } from './session-key';
import type { TurnWaiter } from './turn-waiter';

const TENANT = '0195f3c2-7a3b-7cc1-9a51-000000000001';
const AGENT = '0195f3c2-7a3b-7cc1-9a51-000000000002';
const OTHER_AGENT = '0195f3c2-7a3b-7cc1-9a51-000000000003';
const OPEN = '0195f3c2-7a3b-7cc1-9a51-00000000000a';
const CLOSED = '0195f3c2-7a3b-7cc1-9a51-00000000000b';
const THEIRS = '0195f3c2-7a3b-7cc1-9a51-00000000000c';
const MISSING = '0195f3c2-7a3b-7cc1-9a51-00000000000d';

/**
 * `AgentTurns`' session resolution and hold over fakes of its seams (the real ones are covered by
 * the e2e suites of every protocol): which session a request continues in, and each refusal.
 */
describe('AgentTurns', () => {
  const sessions = new Map([
    [OPEN, { id: OPEN, tenantId: TENANT, agentId: AGENT, status: 'open' }],
    [CLOSED, { id: CLOSED, tenantId: TENANT, agentId: AGENT, status: 'closed' }],
    [THEIRS, { id: THEIRS, tenantId: TENANT, agentId: OTHER_AGENT, status: 'open' }],
  ]);
  let imports: SessionImport[];
  let importAnswer: SessionImportResult;
  let waited: TurnResponse | undefined;

  const turns = () => {
    imports = [];
    importAnswer = 'created';
    waited = undefined;
    const admission = {
      importSession: (s: SessionImport) => {
        imports.push(s);
        return Promise.resolve(importAnswer);
      },
    } as unknown as Admission;
    const shutdown = new AbortController();
    return {
      shutdown,
      turns: new AgentTurns({
        agents: {} as AgentsRepository,
        sessions: {
          find: (tenantId: string, id: string) =>
            Promise.resolve(tenantId === TENANT ? (sessions.get(id) ?? null) : null),
        } as unknown as SessionsRepository,
        admission,
        waiter: {
          untilEnded: () => Promise.resolve(waited),
          shutdown: shutdown.signal,
        } as unknown as TurnWaiter,
        streams: {} as EventStreams,
        control: {} as never,
        sql: {} as SqlDb,
        detail: () => Promise.reject(new Error('not read here')),
        config: { WAIT_TIMEOUT_MS: 1000 } as Config,
      }),
    };
  };

  const refusal = async (p: Promise<unknown>): Promise<SessionRefusal> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof SessionRefused)) throw new Error(`expected a SessionRefused, got ${String(err)}`);
    return err.reason;
  };

  it('continues a named session that is the tenant’s, the agent’s and open; refuses each other case', async () => {
    const { turns: t } = turns();
    expect(await t.session(TENANT, AGENT, { sessionId: OPEN })).toBe(OPEN);
    expect(await refusal(t.session(TENANT, AGENT, { sessionId: MISSING }))).toBe('session_not_found');
    expect(await refusal(t.session(TENANT, AGENT, { sessionId: 'not-a-uuid' }))).toBe('session_not_found');
    expect(await refusal(t.session(TENANT, AGENT, { sessionId: THEIRS }))).toBe('other_agent');
    expect(await refusal(t.session(TENANT, AGENT, { sessionId: CLOSED }))).toBe('session_closed');
    // Another tenant's session is not found, never "another agent's".
    expect(await refusal(t.session(MISSING, AGENT, { sessionId: OPEN }))).toBe('session_not_found');
    expect(imports).toEqual([]);
  });

  it('a new session is imported with the history, its id derived from the Idempotency-Key', async () => {
    const { turns: t } = turns();
    const history = [{ role: 'user' as const, text: 'earlier' }];
    const id = await t.session(TENANT, AGENT, {
      new: {
        createdBy: 'responses',
        history,
        importedAs: 'responses',
        key: { idempotencyKey: 'k', scope: 'responses' },
      },
    });
    expect(id).toBe(sessionIdForKey(TENANT, 'k', 'responses'));
    expect(imports).toEqual([
      expect.objectContaining({
        sessionId: id,
        tenantId: TENANT,
        agentId: AGENT,
        history,
        metadata: { createdBy: 'responses' },
        messageMetadata: { imported: 'responses' },
        kind: 'operator_prompt',
      }),
    ]);
  });

  it('a key whose session is another agent’s is key_reused; a retry of the same request finds its session', async () => {
    const { turns: t } = turns();
    importAnswer = 'other_agent';
    const request = { new: { createdBy: 'chat.completions', key: { idempotencyKey: 'k' } } };
    expect(await refusal(t.session(TENANT, AGENT, request))).toBe('key_reused');
    importAnswer = 'exists';
    expect(await t.session(TENANT, AGENT, request)).toBe(sessionIdForKey(TENANT, 'k'));
  });

  it('a client-chosen id that exists already is continued as a named session, with its checks', async () => {
    const { turns: t } = turns();
    importAnswer = 'exists';
    expect(await t.session(TENANT, AGENT, { new: { createdBy: 'langgraph', id: OPEN } })).toBe(OPEN);
    importAnswer = 'other_agent';
    expect(await refusal(t.session(TENANT, AGENT, { new: { createdBy: 'langgraph', id: THEIRS } }))).toBe(
      'other_agent',
    );
  });

  it('a previous turn that is not the tenant’s is previous_not_found', async () => {
    const { turns: t } = turns();
    expect(await refusal(t.session(TENANT, AGENT, { afterTurnId: 'resp_nothing' }))).toBe(
      'previous_not_found',
    );
  });

  it('hold says why it did not settle: the client left, the deadline, or the shutdown', async () => {
    const { turns: t, shutdown } = turns();
    const started = {
      tenantId: TENANT,
      turnId: MISSING,
      watch: {} as LiveWatch,
      subscribedBeforeAdmission: false,
    };
    expect(await t.hold(started)).toEqual({ settled: false, why: 'deadline' });
    const left = new AbortController();
    left.abort();
    expect(await t.hold(started, { signal: left.signal })).toEqual({ settled: false, why: 'left' });
    shutdown.abort();
    expect(await t.hold(started)).toEqual({ settled: false, why: 'shutdown' });
    waited = { id: MISSING, status: 'completed' } as TurnResponse;
    expect(await t.hold(started)).toEqual({ settled: true, turn: waited });
  });
});
