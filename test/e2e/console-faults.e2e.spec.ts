import type { Page } from 'playwright-core';
import { scripted, waitFor, type RecordedRequest, type ScriptedReply } from '@switchboard/testing';
import type { Api } from '../support/api';
import { openConsole, screenshot, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';

jest.setTimeout(240_000);

/** Generous: the CI machine is loaded, and a process restart plus a streamed turn take a while. */
const T = { timeout: 90_000 };
const MODEL = 'openai-chat/gpt-4o-mini';

/** `n` tagged words (`g000 g001 …`): one per streamed piece, so a gap or a repeat names itself. */
const tagged = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`).join(' ');
/** Long enough to outlast a process restart, so the kill lands mid-stream. */
const GATEWAY_TEXT = tagged('g', 200);
const WORKER_TEXT = tagged('h', 120);

/** The text of the last message a model call carries (OpenAI chat shape). */
function lastText(req: RecordedRequest): string {
  const messages = (req.body as { messages?: { content?: unknown }[] } | undefined)?.messages;
  const c = messages?.at(-1)?.content;
  if (typeof c === 'string') return c;
  return Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? '').join('') : '';
}

/**
 * The model, by what the user said: the last line of the last message (recalled memory, which may
 * quote an earlier message, comes before it). Post-turn calls of the hooks and triage workers get 'ok'.
 */
function model(req: RecordedRequest): ScriptedReply {
  const text = lastText(req).split('\n').at(-1) ?? '';
  if (text.startsWith('GATEWAY'))
    return scripted.text(GATEWAY_TEXT, { textPieces: 200, frameIntervalMs: 150 });
  if (text.startsWith('WORKER')) return scripted.text(WORKER_TEXT, { textPieces: 120, frameIntervalMs: 100 });
  return scripted.text('ok');
}

/**
 * The live session page under faults, in Chromium against real processes: the gateway SIGKILLed and
 * started again on its port mid-stream (the page reconnects by itself and resumes after the last
 * journaled seq), and the harness worker running the turn SIGKILLed (another takes the turn over
 * after its lease and runs the round again). Throughout, what the page shows of the turn is always
 * a prefix of the answer — no piece twice, none skipped — and at the end the answer whole, once.
 */
describe('console: the live session page under faults', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  let c: ConsolePage;
  let page: Page;
  let agentId: string;

  beforeAll(async () => {
    stack = await startConsoleStack();
    stack.llm.setDefault(model);
    ({ api, key } = await stack.tenant('console-faults'));
    const r = await api.post('/v1/agents', { name: 'streamer', model: MODEL, archivist: { mode: 'off' } });
    expect(r.status).toBe(201);
    agentId = r.body.id as string;
    c = await openConsole(stack.browser, stack.url);
    page = c.page;
    await signIn(page, key);
  });

  afterAll(async () => {
    await c?.close();
    await stack?.close();
  });

  const liveText = async () => (await page.getByTestId('live-text').textContent()) ?? '';
  const connection = (s: string) => page.getByRole('status').getByText(`stream ${s}`, { exact: true });
  const turnStatus = (s: string) => page.getByTestId('turn-status').getByText(s, { exact: true });

  /** A new session's page. */
  async function openSession(): Promise<string> {
    const session = await api.post('/v1/sessions', { agentId });
    expect(session.status).toBe(201);
    const id = session.body.id as string;
    await page.goto(`/console/sessions/${id}`);
    // (The stream says 'live' at its first frame: an empty session has none yet.)
    await page.getByText('none yet').waitFor(T);
    return id;
  }

  async function send(text: string): Promise<void> {
    await page.getByLabel('Message').fill(text);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
  }

  /**
   * Watches the live text until `done` holds: every reading must be a prefix of `full` (a repeated
   * or skipped piece is not), ending with `full` itself. Returns the readings that were not.
   */
  async function watch(full: string, what: string, done: (shown: string) => boolean): Promise<string[]> {
    const bad: string[] = [];
    await waitFor(
      async () => {
        const shown = await liveText();
        if (!full.startsWith(shown)) bad.push(shown);
        return done(shown);
      },
      { what, timeoutMs: 120_000, intervalMs: 50 },
    );
    return bad;
  }

  /** The turn ended well: the transcript's answer is the whole text once, the page shows no error. */
  async function finished(full: string): Promise<void> {
    await turnStatus('completed').waitFor(T);
    const answer = page.getByTestId('transcript').locator('li.entry-assistant');
    await answer.getByText(full.slice(-4)).waitFor(T);
    expect(await answer.count()).toBe(1);
    expect(((await answer.locator('.markdown').textContent()) ?? '').trim()).toBe(full);
    expect(await liveText()).toBe(full);
    await connection('live').waitFor(T);
    expect(await page.locator('.live-turn .error').count()).toBe(0);
    expect(c.foreign()).toEqual([]);
  }

  it('the gateway SIGKILLed mid-stream: the page reconnects to the new process and misses nothing', async () => {
    await openSession();
    await send('GATEWAY stream a long answer');
    const before = await watch(GATEWAY_TEXT, 'some streamed text', (s) => s.includes('g010'));
    const shownAtKill = await liveText();
    expect(shownAtKill).not.toContain('g199');

    await stack.gateway().kill('SIGKILL');
    // The page notices by itself (no reload) and keeps trying while nothing listens on the port.
    await connection('reconnecting…').waitFor(T);
    const restart = stack.restartGateway();
    const during = await watch(GATEWAY_TEXT, 'the whole answer after the restart', (s) => s === GATEWAY_TEXT);
    await restart;
    expect([...before, ...during]).toEqual([]);
    await finished(GATEWAY_TEXT);
    await screenshot(page, 'faults-gateway-restarted');
  });

  it('the harness worker SIGKILLed mid-turn: another resumes the turn, its re-run round shown once', async () => {
    const sessionId = await openSession();
    await send('WORKER stream an answer');
    const harness = stack.processes.find((p) => p.logFile.includes('harness-worker'))!;
    const before = await watch(WORKER_TEXT, 'some streamed text', (s) => s.includes('h010'));
    const atKill = await liveText();
    expect(atKill).not.toContain('h119');
    expect(await harness.kill('SIGKILL')).toBeNull();
    // A new worker takes the turn once the dead one's lease runs out (SESSION_LEASE_MS: 3 s in tests)
    // and asks the model again: the round streams again from its start, live, on the open page (the
    // dead attempt's text goes; the new one grows from nothing rather than appearing whole at its commit).
    const spare = stack.spawnWorker('harness-worker');
    const rerun = await watch(
      WORKER_TEXT,
      'the re-run streaming live from its start',
      (s) => s.length < atKill.length,
    );
    const during = await watch(WORKER_TEXT, 'the whole answer from the new worker', (s) => s === WORKER_TEXT);
    await spare;
    expect([...before, ...rerun, ...during]).toEqual([]);
    await finished(WORKER_TEXT);
    // It was the crash recovery that finished it: the turn ran twice.
    const turn = await stack.env.db.turn.findFirstOrThrow({ where: { sessionId } });
    expect(turn.runCount).toBe(2);
    await screenshot(page, 'faults-worker-resumed');
  });
});
