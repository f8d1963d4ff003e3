import type { Page } from 'playwright-core';
import { scripted, waitFor, type RecordedRequest, type ScriptedReply } from '@switchboard/testing';
import type { Api } from '../support/api';
import { openConsole, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';

jest.setTimeout(180_000);

const T = { timeout: 60_000 };

/** The text of the last user message a model call carries (OpenAI chat shape). */
function lastUserText(req: RecordedRequest): string {
  const messages =
    (req.body as { messages?: { role?: string; content?: unknown }[] } | undefined)?.messages ?? [];
  const c = messages.filter((m) => m.role === 'user').at(-1)?.content;
  return typeof c === 'string'
    ? c
    : Array.isArray(c)
      ? c.map((p: { text?: string }) => p.text ?? '').join('')
      : '';
}

/**
 * Steering a running turn from the session page's composer, in Chromium against real processes:
 * Interject delivers a message into the running turn before its next model call (the turn answers
 * it), Interrupt cancels the running turn and runs the new message instead.
 */
describe('console: steering a running turn', () => {
  let stack: ConsoleStack;
  let api: Api;
  let agentId: string;
  let c: ConsolePage;
  let page: Page;
  /** Releases the held first model call of the interject case. */
  let release: () => void = () => undefined;
  let held: Promise<void>;
  let holding: () => void = () => undefined;

  beforeAll(async () => {
    stack = await startConsoleStack();
    held = new Promise((r) => (holding = r));
    stack.llm.setDefault(async (req): Promise<ScriptedReply> => {
      const text = lastUserText(req);
      const last = (req.body as { messages?: { role?: string }[] }).messages?.at(-1);
      if (text.startsWith('NOTE')) return scripted.text('I heard the interjection.');
      if (text.startsWith('HOLD') && last?.role === 'user') {
        holding();
        await new Promise<void>((r) => (release = r));
        return scripted.toolCall('word_count', { text: 'one two three' });
      }
      if (text.startsWith('HOLD')) return scripted.text('Counted, with nothing added.');
      if (text.startsWith('SLOW'))
        return scripted.text(Array.from({ length: 200 }, (_, i) => `slow${i}`).join(' '), {
          textPieces: 200,
          frameIntervalMs: 150,
        });
      if (text.startsWith('AFTER')) return scripted.text('The interrupting message is answered.');
      return scripted.text('ok');
    });
    const t = await stack.tenant('console-steering');
    api = t.api;
    const agent = await api.post('/v1/agents', {
      name: 'steered',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['word_count'],
      archivist: { mode: 'off' },
    });
    agentId = agent.body.id;
    c = await openConsole(stack.browser, stack.url);
    page = c.page;
    await signIn(page, t.key);
  });

  afterAll(async () => {
    release();
    await c?.close();
    await stack?.close();
  });

  afterEach(() => {
    expect(c.foreign()).toEqual([]);
  });

  async function newSessionPage(): Promise<string> {
    const id = (await api.post('/v1/sessions', { agentId })).body.id as string;
    await page.goto(`/console/sessions/${id}`);
    await page.getByTestId('transcript').waitFor();
    return id;
  }

  async function turnOf(sessionId: string, content: string) {
    const messages = (await api.get(`/v1/sessions/${sessionId}/messages`)).body.data as {
      turnId: string;
      role: string;
      body: unknown;
    }[];
    const input = messages.find((m) => m.role === 'user' && JSON.stringify(m.body).includes(content));
    return input ? (await api.get(`/v1/turns/${input.turnId}`)).body : undefined;
  }

  it('Interject: the running turn takes the message before its next model call and answers it', async () => {
    const session = await newSessionPage();
    await page.getByLabel('Message').fill('HOLD and count');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await held; // the turn's first model call is in flight
    await page.getByTestId('turn-status').filter({ hasText: 'running' }).waitFor(T);
    await page.getByLabel('Message').fill('NOTE: also say you heard me');
    await page.getByRole('button', { name: 'Interject' }).click();
    // Admitted while the turn runs; delivered at its next safe point, after the tool call.
    await waitFor(async () => (await turnOf(session, 'NOTE')) !== undefined, {
      what: 'the interjection admitted',
    });
    release();
    await page.getByTestId('transcript').getByText('I heard the interjection.').waitFor(T);
    const running = await turnOf(session, 'HOLD');
    expect({ status: running.status, finalText: running.finalText }).toEqual({
      status: 'completed',
      finalText: 'I heard the interjection.',
    });
  });

  it('Interrupt: the running turn is cancelled and the new message runs instead', async () => {
    const session = await newSessionPage();
    await page.getByLabel('Message').fill('SLOW answer');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page.getByTestId('live-text').getByText(/slow3/).waitFor(T);
    await page.getByLabel('Message').fill('AFTER the interrupt');
    await page.getByRole('button', { name: 'Interrupt' }).click();
    await page.getByTestId('transcript').getByText('The interrupting message is answered.').waitFor(T);
    expect((await turnOf(session, 'SLOW')).status).toBe('cancelled');
    expect((await turnOf(session, 'AFTER')).status).toBe('completed');
  });
});
