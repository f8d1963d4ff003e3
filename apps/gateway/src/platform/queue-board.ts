import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { getQueueToken } from '@nestjs/bullmq';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, QueueName } from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import { checkAdminToken } from './auth/guard';
import { bearer } from './auth/keys';

/** Where the board is served. */
export const QUEUE_BOARD_PATH = '/admin/queues';

/** What each queue carries, shown under its name on the board. */
const DESCRIPTIONS: Record<QueueName, string> = {
  [QueueName.Triage]: 'inbound events deciding whether a turn runs (triage worker)',
  [QueueName.Turns]: 'agent turns (harness worker)',
  [QueueName.PostTurn]: 'post-turn hooks (hooks worker)',
  [QueueName.OutboundWebhooks]: 'completion webhooks to tenants (triage worker)',
  [QueueName.Maintenance]: 'reconciliation and housekeeping (harness worker)',
  [QueueName.Schedules]: 'cron schedules firing (triage worker)',
  [QueueName.Work]: 'work-item ticks (triage worker)',
  [QueueName.MemoryEmbed]: "embedding agents' memory records (hooks worker)",
  [QueueName.TenantDeletion]: 'tenant deletions in batches (hooks worker)',
};

/**
 * The token of a queue-board request: `Authorization: Bearer <ADMIN_TOKEN>` as on the admin API,
 * or HTTP Basic with ADMIN_TOKEN as the password (any user name), which is what a browser can send:
 * a 401 asks for it, and the browser then sends it with the board's scripts and API calls too.
 */
export function boardToken(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(value ?? '');
  if (!basic) return bearer(value);
  const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

/**
 * Bull Board at /admin/queues: every Switchboard queue (the gateway's BullMQ queues, so under
 * QUEUE_PREFIX) with its job counts and jobs, behind the operator's ADMIN_TOKEN, read-only unless
 * QUEUE_BOARD_ACTIONS is `true` (then retry, promote, clean, pause, empty work). It is a Fastify
 * plugin beside Nest's routes: the admin check runs in its own `onRequest` hook (Nest's guards do
 * not see these routes), and it is not part of the OpenAPI document. Helmet's headers cover it:
 * its page loads only same-origin scripts (`script-src 'self'`), its inline styles and Google Fonts
 * stylesheet fall under helmet's `style-src 'self' https: 'unsafe-inline'` (docs/adr/0040).
 */
export async function registerQueueBoard(app: NestFastifyApplication, config: Config): Promise<void> {
  const readOnlyMode = !config.QUEUE_BOARD_ACTIONS;
  const queues = Object.values(QueueName).map(
    (name) =>
      new BullMQAdapter(app.get<Queue>(getQueueToken(name)), {
        readOnlyMode,
        description: DESCRIPTIONS[name],
      }),
  );
  const serverAdapter = new FastifyAdapter().setBasePath(QUEUE_BOARD_PATH);
  createBullBoard({
    queues,
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Switchboard queues' } },
  });
  const board = serverAdapter.registerPlugin();
  await app.register(
    async (scope: FastifyInstance) => {
      scope.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
        try {
          checkAdminToken(config.ADMIN_TOKEN, boardToken(request.headers.authorization));
        } catch (err) {
          const error = err as AppError;
          return reply
            .code(error.status)
            .header('www-authenticate', 'Basic realm="Switchboard queues", charset="UTF-8"')
            .header('content-type', 'application/json; charset=utf-8')
            .send(error.toBody());
        }
      });
      await scope.register(board);
    },
    { prefix: QUEUE_BOARD_PATH },
  );
}
