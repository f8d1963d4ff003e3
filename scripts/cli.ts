/**
 * The tenant's CLI over the HTTP API, on the typed client (libs/client): `npm run cli -- <command>`,
 * `--help` on any command. The gateway and key come from --url / --key or SWITCHBOARD_URL /
 * SWITCHBOARD_API_KEY. Answers are printed as JSON; an error answer goes to stderr with exit 1.
 * (The operator's commands — tenants, keys, limits, pause — are `npm run admin`.)
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { createSwitchboardClient, type SwitchboardClient } from '@switchboard/client';

const program = new Command()
  .name('npm run cli --')
  .description('Switchboard from a shell, over the HTTP API with a tenant API key')
  .option(
    '--url <url>',
    'the gateway (SWITCHBOARD_URL)',
    process.env.SWITCHBOARD_URL ?? 'http://localhost:3000',
  )
  .option('--key <key>', 'a tenant API key (SWITCHBOARD_API_KEY)', process.env.SWITCHBOARD_API_KEY)
  .showHelpAfterError();

function client(): SwitchboardClient {
  const o = program.opts<{ url: string; key?: string }>();
  if (!o.key) throw new CliError('no API key: give --key or set SWITCHBOARD_API_KEY');
  return createSwitchboardClient({ baseUrl: o.url, apiKey: o.key });
}

class CliError extends Error {}

/** An answer's body, or its error (the API's error shape) as a CliError. */
async function answer<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await p;
  if (error !== undefined || !response.ok) {
    throw new CliError(`HTTP ${response.status}: ${JSON.stringify(error ?? data)}`);
  }
  return data as T;
}

const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));
const positiveInt = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('a positive integer');
  return n;
};
const collect = (v: string, all: string[]) => [...all, v];

const agents = program.command('agents').description('agents of the tenant');
agents
  .command('list')
  .option('--limit <n>', 'at most this many', positiveInt)
  .action(async (o: { limit?: number }) =>
    print(await answer(client().api.GET('/v1/agents', { params: { query: { limit: o.limit } } }))),
  );
agents
  .command('create')
  .requiredOption('--name <name>', 'its name (what `model` names in chat completions)')
  .option('--instructions <text>', 'its system prompt')
  .option('--model <provider/model>', 'its model (default: the deployment’s DEFAULT_MODEL)')
  .option('--tool <name>', 'a tool it may call (repeat for more)', collect, [])
  .option('--approval-required <name>', 'a tool whose calls wait for a human decision (repeat)', collect, [])
  .action(
    async (o: {
      name: string;
      instructions?: string;
      model?: string;
      tool: string[];
      approvalRequired: string[];
    }) =>
      print(
        await answer(
          client().api.POST('/v1/agents', {
            body: {
              name: o.name,
              ...(o.instructions ? { instructions: o.instructions } : {}),
              ...(o.model ? { model: o.model } : {}),
              ...(o.tool.length ? { tools: o.tool } : {}),
              ...(o.approvalRequired.length ? { approvalRequired: o.approvalRequired } : {}),
            },
          }),
        ),
      ),
  );

const sessions = program.command('sessions').description('conversations with an agent');
sessions
  .command('create')
  .requiredOption('--agent <id>', 'the agent')
  .option('--title <title>')
  .action(async (o: { agent: string; title?: string }) =>
    print(
      await answer(
        client().api.POST('/v1/sessions', {
          body: { agentId: o.agent, ...(o.title ? { title: o.title } : {}) },
        }),
      ),
    ),
  );
sessions
  .command('list')
  .option('--limit <n>', 'at most this many', positiveInt)
  .action(async (o: { limit?: number }) =>
    print(await answer(client().api.GET('/v1/sessions', { params: { query: { limit: o.limit } } }))),
  );

program
  .command('send')
  .description(
    'send a message into a session: its turn is queued (202), or with --wait answered once it ends',
  )
  .argument('<session>', 'the session id')
  .argument('<text>', 'the message')
  .option('--wait', 'hold the answer until the turn ends (or pauses for approval)')
  .option('--stream', "print the turn's text as the model writes it, then the turn")
  .option('--idempotency-key <key>', 'a retry with the same key is the same message')
  .action(
    async (
      session: string,
      text: string,
      o: { wait?: boolean; stream?: boolean; idempotencyKey?: string },
    ) => {
      const sb = client();
      const admitted = await answer(
        sb.api.POST('/v1/sessions/{id}/messages', {
          params: { path: { id: session } },
          headers: o.idempotencyKey ? { 'Idempotency-Key': o.idempotencyKey } : {},
          body: { content: text, ...(o.wait && !o.stream ? { wait: true } : {}) },
        }),
      );
      if (!o.stream) return print(admitted);
      const turnId = (admitted as { turnId: string }).turnId;
      // Live frames (no id) carry the text as the model writes it; a turn that ended before the
      // stream opened has only the journaled text, printed whole at the end.
      let live = false;
      let journaled = '';
      for await (const frame of sb.streamTurn(turnId)) {
        if (frame.event !== 'text_delta') continue;
        const text = (frame.data as { data?: { text?: string } }).data?.text ?? '';
        if (frame.id === undefined) {
          live = true;
          process.stdout.write(text);
        } else journaled += text;
      }
      process.stdout.write(`${live ? '' : journaled}\n`);
      print(await answer(sb.api.GET('/v1/turns/{id}', { params: { path: { id: turnId } } })));
    },
  );

const turns = program.command('turns').description('turns: one message’s run');
turns
  .command('get')
  .argument('<id>')
  .action(async (id: string) =>
    print(await answer(client().api.GET('/v1/turns/{id}', { params: { path: { id } } }))),
  );
turns
  .command('cancel')
  .argument('<id>')
  .option('--reason <text>')
  .action(async (id: string, o: { reason?: string }) =>
    print(
      await answer(
        client().api.POST('/v1/turns/{id}/cancel', {
          params: { path: { id } },
          body: o.reason ? { reason: o.reason } : {},
        }),
      ),
    ),
  );

const approvals = program.command('approvals').description('tool calls waiting for a human decision');
const STATUSES = ['pending', 'approved', 'rejected', 'expired', 'cancelled'] as const;
approvals
  .command('list')
  .addOption(new Option('--status <status>', 'only these').choices(STATUSES))
  .action(async (o: { status?: (typeof STATUSES)[number] }) =>
    print(await answer(client().api.GET('/v1/approvals', { params: { query: { status: o.status } } }))),
  );
for (const decision of ['approve', 'reject'] as const) {
  approvals
    .command(decision)
    .argument('<id>', 'the approval')
    .option('--reason <text>')
    .action(async (id: string, o: { reason?: string }) =>
      print(
        await answer(
          client().api.POST('/v1/approvals/{id}', {
            params: { path: { id } },
            body: { decision, ...(o.reason ? { reason: o.reason } : {}) },
          }),
        ),
      ),
    );
}

program
  .command('usage')
  .description("the tenant's spend and tokens")
  .option('--daily', 'per UTC day')
  .action(async (o: { daily?: boolean }) =>
    print(
      o.daily
        ? await answer(client().api.GET('/v1/usage/daily', {}))
        : await answer(client().api.GET('/v1/usage', {})),
    ),
  );
program
  .command('triggers')
  .description("the tenant's webhook triggers")
  .action(async () => print(await answer(client().api.GET('/v1/triggers', {}))));
program
  .command('schedules')
  .description("the tenant's schedules")
  .action(async () => print(await answer(client().api.GET('/v1/schedules', {}))));

program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(err instanceof CliError ? err.message : err instanceof Error ? err.stack : String(err));
  process.exit(1);
});
