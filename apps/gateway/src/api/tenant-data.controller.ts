import { Readable } from 'node:stream';
import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import { ApiOperation, ApiQuery, ApiResponse } from '@nestjs/swagger';
import type { Queue } from 'bullmq';
import type { FastifyReply } from 'fastify';
import {
  AppError,
  DeleteTenantResponse,
  Jobs,
  newId,
  notFound,
  QueueName,
  TenantDeletionPageResponse,
  TenantDeletionResponse,
} from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { poolOf } from '@switchboard/database';
import { CIPHER, DB, type TenantCipher } from '@switchboard/platform';
import { publish } from '@switchboard/queue';
import {
  auditTenantExported,
  BadExportCursor,
  decodeExportCursor,
  exportTenant,
  findTenantDeletion,
  OPERATOR_ACTOR,
  requestTenantDeletion,
  tenantDeletionPage,
  tenantTables,
  TenantsRepository,
  type TenantDeletionRow,
} from '@switchboard/store';
import { Actor, AdminOnly, TenantId } from '../platform/auth/guard';
import { KEY_REVOCATIONS, type KeyRevocations } from '../platform/auth/key-revocations';
import { AdminApi, ApiErrors, Operation, TenantApi } from '../platform/openapi';
import { PageQueryDto } from './dto';
import { decodeCursor, encodeCursor, pathId } from './presenters';

/**
 * Decryption of stored content for the export (docs/adr/0067): applied to every column value. The
 * tenant cipher's `openDeep`; the identity without a key provider.
 */
export type OpenContent = (tenantId: string, value: unknown) => Promise<unknown>;
export const EXPORT_OPEN = Symbol('EXPORT_OPEN');
/** The identity, marked so the export copies rows as Postgres wrote them without parsing them. */
export const identityOpen: OpenContent & { identity: true } = Object.assign(
  async (_tenantId: string, value: unknown) => value,
  { identity: true as const },
);
/** The tenant cipher's `openDeep` when the deployment has a key provider, else the identity. */
export const exportOpenProvider = {
  provide: EXPORT_OPEN,
  inject: [CIPHER],
  useFactory: (cipher: TenantCipher): OpenContent =>
    cipher.available ? (tenantId, value) => cipher.openDeep(tenantId, value) : identityOpen,
};

export const presentTenantDeletion = (d: TenantDeletionRow): TenantDeletionResponse => ({
  id: d.id,
  tenantId: d.tenantId,
  tenantName: d.tenantName,
  status: d.status,
  stage: d.stage,
  counts: d.counts,
  redisKeys: d.redisKeys,
  jobs: d.jobs,
  originals: d.originals,
  keyDestroyed: d.keyDestroyed,
  requestedAt: d.requestedAt.toISOString(),
  startedAt: d.startedAt?.toISOString() ?? null,
  completedAt: d.completedAt?.toISOString() ?? null,
  error: d.error,
});

const EXPORT_DESCRIPTION =
  'Streams everything the tenant has as JSONL (`application/x-ndjson`, docs/TENANT-DATA.md): a `manifest` line, ' +
  'then per table (every table holding its rows, parents first) its rows in primary-key order as `{"kind":"row","table":…,"row":…}`, ' +
  'a `{"kind":"checkpoint","cursor":…}` after every page, and `{"kind":"end","counts":…}` last. Stored tool-result originals ' +
  'and memory (records, blocks, versions, embeddings) are tables like the others. An interrupted download resumes with ' +
  '`?after=<the last checkpoint cursor received>` (drop the rows after that checkpoint). A malformed cursor is a 400. ' +
  'Written in the audit log as `tenant.exported` once the last line is out.';

const ExportDocs = (id: string, summary: string) => [
  ApiOperation({ operationId: id, summary, description: EXPORT_DESCRIPTION }),
  ApiQuery({
    name: 'after',
    required: false,
    description: "A checkpoint's cursor: the export resumes after that row.",
    schema: { type: 'string', maxLength: 2000 },
  }),
  ApiResponse({
    status: 200,
    description: 'The archive, one JSON object per line.',
    content: { 'application/x-ndjson': { schema: { type: 'string' } } },
  }),
];

/** The archive of a tenant, streamed with backpressure (shared by the operator's and the tenant's route). */
async function streamExport(
  db: Db,
  open: OpenContent,
  reply: FastifyReply,
  tenantId: string,
  actor: string,
  after: string | undefined,
): Promise<void> {
  if (after !== undefined && (typeof after !== 'string' || after.length === 0 || after.length > 2000)) {
    throw new AppError('bad_request', 'after: not a cursor an export gave');
  }
  const pool = poolOf(db);
  // The data keys stay behind (docs/adr/0067): the archive carries content opened, and a wrapped key
  // is useless under another install's key-encryption key.
  const tables = (await tenantTables(pool)).filter((t) => t.name !== 'tenant_data_keys');
  let cursor;
  try {
    cursor = after === undefined ? undefined : await decodeExportCursor(pool, tables, after);
  } catch (err) {
    if (err instanceof BadExportCursor) throw new AppError('bad_request', `after: ${err.message}`);
    throw err;
  }
  const lines = exportTenant(pool, tenantId, tables, {
    after: cursor,
    open: (open as OpenContent & { identity?: boolean }).identity ? undefined : open,
    onComplete: (counts) => auditTenantExported(pool, tenantId, actor, counts, cursor !== undefined),
  });
  await reply
    .status(200)
    .header('content-type', 'application/x-ndjson; charset=utf-8')
    .header('content-disposition', `attachment; filename="tenant-${tenantId}.jsonl"`)
    .header('cache-control', 'no-store')
    .send(Readable.from(lines, { objectMode: false, highWaterMark: 64 * 1024 }));
}

/** The operator's export, deletion and deletion receipts of tenants (ADMIN_TOKEN; docs/adr/0068). */
@AdminApi('admin')
@Controller('v1/admin')
export class TenantDataAdminController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(TenantsRepository) private readonly tenants: TenantsRepository,
    @Inject(EXPORT_OPEN) private readonly open: OpenContent,
    @Inject(getQueueToken(QueueName.TenantDeletion)) private readonly deletions: Queue,
    @Inject(KEY_REVOCATIONS) private readonly revocations: KeyRevocations,
  ) {}

  @Post('tenants/:id/export')
  @AdminOnly()
  @HttpCode(200)
  @ExportDocsDecorator('exportTenant', "Stream a tenant's data as a JSONL archive (resumable)")
  @ApiErrors(400, 404)
  async export(
    @Param('id') id: string,
    @Query('after') after: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const tenantId = pathId(id, 'tenant');
    if (!(await this.tenants.find(tenantId))) throw notFound('tenant');
    await streamExport(this.db, this.open, reply, tenantId, OPERATOR_ACTOR, after);
  }

  @Delete('tenants/:id')
  @AdminOnly()
  @HttpCode(202)
  @Operation({
    id: 'deleteTenant',
    summary: 'Delete a tenant and everything it has, in the background, ending with a receipt',
    description:
      "Starts the tenant's deletion (docs/adr/0068) and answers 202 with it. The tenant's API keys are revoked with the request (refused at once on every gateway); a background job destroys the tenant's data keys first, pauses its admission, removes its Redis keys and queued jobs, then deletes every row of the tenant in every table and partition in small batches (other tenants are not held up), and ends with the receipt: the operator-wide audit entry `tenant.deleted` with the counts. Follow it at GET /v1/admin/tenant-deletions/{id}. Asking again while it runs is harmless: the same deletion, 202 again (after a failed one, a new deletion picks up what is left). 404 for an unknown tenant.",
    status: 202,
    schema: DeleteTenantResponse,
    errors: [404],
  })
  async delete(@Param('id') id: string): Promise<DeleteTenantResponse> {
    const tenantId = pathId(id, 'tenant');
    const pool = poolOf(this.db);
    const result = await requestTenantDeletion(pool, tenantId, OPERATOR_ACTOR);
    if (!result) throw notFound('tenant');
    // Its keys were revoked with the request: no gateway honours them from its cache any longer.
    for (const hash of result.revokedKeyHashes) await this.revocations.revoked(hash);
    // Published on every request: a run lost with a worker is started again (each run resumes).
    await publish(this.deletions, Jobs.tenantDeletion, { deletionId: result.deletion.id, run: newId() });
    return { deletion: presentTenantDeletion(result.deletion) };
  }

  @Get('tenant-deletions')
  @AdminOnly()
  @Operation({
    id: 'listTenantDeletions',
    summary: 'Tenant deletions and their receipts, newest first',
    description:
      "Every tenant deletion, newest first, with its status, stage and the rows deleted per table; kept after the tenant is gone. Paged by `limit` (default 50, at most 200) and `cursor` (the previous page's `nextCursor`); a malformed cursor is a 400.",
    status: 200,
    schema: TenantDeletionPageResponse,
    errors: [400],
  })
  async list(@Query() q: PageQueryDto): Promise<TenantDeletionPageResponse> {
    const before = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const rows = await tenantDeletionPage(poolOf(this.db), before?.[0], limit);
    const page = rows.slice(0, limit);
    return {
      data: page.map(presentTenantDeletion),
      nextCursor: rows.length > limit ? encodeCursor([page[page.length - 1].id]) : null,
    };
  }

  @Get('tenant-deletions/:id')
  @AdminOnly()
  @Operation({
    id: 'getTenantDeletion',
    summary: 'A tenant deletion: its status, stage and counts',
    description:
      'One tenant deletion: queued, running (with its stage: keys, pause, redis, rows), completed (its receipt is the `tenant.deleted` audit entry) or failed (`error`; DELETE the tenant again to retry). 404 when there is none.',
    status: 200,
    schema: TenantDeletionResponse,
    errors: [404],
  })
  async get(@Param('id') id: string): Promise<TenantDeletionResponse> {
    const row = await findTenantDeletion(poolOf(this.db), pathId(id, 'tenant deletion'));
    if (!row) throw notFound('tenant deletion');
    return presentTenantDeletion(row);
  }
}

/** The tenant's own export, for an admin-role key (docs/adr/0068). */
@TenantApi('settings')
@Controller('v1')
export class TenantExportController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(EXPORT_OPEN) private readonly open: OpenContent,
  ) {}

  @Post('export')
  @HttpCode(200)
  @ExportDocsDecorator(
    'exportOwnTenant',
    "Stream the calling tenant's data as a JSONL archive (resumable; admin keys)",
  )
  @ApiErrors(400)
  async export(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Query('after') after: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    await streamExport(this.db, this.open, reply, tenantId, actor, after);
  }
}

function ExportDocsDecorator(id: string, summary: string): MethodDecorator {
  return (target, key, descriptor) => {
    for (const d of ExportDocs(id, summary)) d(target, key, descriptor);
  };
}
