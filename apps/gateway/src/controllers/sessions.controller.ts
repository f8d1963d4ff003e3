import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiTags } from '@nestjs/swagger';
import type { Admission } from '@switchboard/admission';
import { AppError, IdempotencyKey, isUuid, newId, notFound, type MessageBody } from '@switchboard/contracts';
import { Prisma, type Db } from '@switchboard/database';
import { TenantId } from '../auth/guard';
import { AdmitMessageDto, CreateSessionDto, EventsQueryDto, PageQueryDto } from '../http/dto';
import {
  decodeCursor,
  encodeCursor,
  pathId,
  presentEvent,
  presentMessage,
  presentSession,
} from '../http/presenters';
import { ADMISSION, DB } from '@switchboard/platform';

@ApiTags('sessions')
@ApiBearerAuth()
@Controller('v1/sessions')
export class SessionsController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(ADMISSION) private readonly admission: Admission,
  ) {}

  @Post()
  @HttpCode(201)
  async create(@TenantId() tenantId: string, @Body() body: CreateSessionDto) {
    const agent = isUuid(body.agentId)
      ? await this.db.agent.findFirst({ where: { id: body.agentId, tenantId, deletedAt: null } })
      : null;
    if (!agent) throw notFound('agent');
    const row = await this.db.session.create({
      data: {
        id: newId(),
        tenantId,
        agentId: agent.id,
        title: body.title ?? null,
        metadata: (body.metadata ?? {}) as Prisma.InputJsonValue,
      },
    });
    return presentSession(row);
  }

  @Get()
  async list(@TenantId() tenantId: string, @Query() q: PageQueryDto) {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const rows = await this.db.session.findMany({
      where: { tenantId, ...(after ? { id: { gt: after[0] } } : {}) },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
    const page = rows.slice(0, limit);
    return {
      data: page.map(presentSession),
      nextCursor: rows.length > limit ? encodeCursor([page[page.length - 1].id]) : null,
    };
  }

  private async find(tenantId: string, id: string) {
    const row = await this.db.session.findFirst({ where: { id: pathId(id, 'session'), tenantId } });
    if (!row) throw notFound('session');
    return row;
  }

  @Get(':id')
  async get(@TenantId() tenantId: string, @Param('id') id: string) {
    return presentSession(await this.find(tenantId, id));
  }

  /** Closes the session: its history stays readable; new messages are refused with 409. */
  @Delete(':id')
  async close(@TenantId() tenantId: string, @Param('id') id: string) {
    const session = await this.find(tenantId, id);
    const row =
      session.status === 'closed'
        ? session
        : await this.db.session.update({
            where: { id: session.id },
            data: { status: 'closed', closedAt: new Date() },
          });
    return presentSession(row);
  }

  /** The transcript in order, with provenance on every entry. */
  @Get(':id/messages')
  async messages(@TenantId() tenantId: string, @Param('id') id: string, @Query() q: PageQueryDto) {
    const session = await this.find(tenantId, id);
    const after = decodeCursor<[number, number]>(q.cursor, ['number', 'number']);
    const limit = q.limit ?? 100;
    const rows = await this.db.message.findMany({
      where: {
        sessionId: session.id,
        ...(after
          ? { OR: [{ turnSeq: { gt: after[0] } }, { turnSeq: after[0], position: { gt: after[1] } }] }
          : {}),
      },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
      take: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map(presentMessage),
      nextCursor: rows.length > limit ? encodeCursor([last.turnSeq, last.position]) : null,
    };
  }

  /** Admits a message: persisted before the 202, then a turn runs it. Honors Idempotency-Key. */
  @Post(':id/messages')
  @HttpCode(202)
  @ApiHeader({ name: 'Idempotency-Key', required: false })
  async admit(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: AdmitMessageDto,
    @Headers('idempotency-key') idempotencyKey?: string,
  ) {
    const sessionId = pathId(id, 'session');
    if (idempotencyKey !== undefined && !IdempotencyKey.safeParse(idempotencyKey).success) {
      throw new AppError('bad_request', 'Idempotency-Key must be 1 to 200 characters');
    }
    const b = body;
    const text = typeof b.content === 'string' ? b.content : b.content.map((c) => c.text).join('\n\n');
    const messageBody: MessageBody = { type: 'text', text };
    const admitted = await this.admission.admit({
      tenantId,
      sessionId,
      kind: 'operator_prompt',
      origin: { kind: 'operator' },
      body: messageBody,
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
      priority: b.priority,
      metadata: b.metadata,
      correlationId: b.correlationId,
      idempotencyKey,
      multitask: b.multitask,
    });
    return { messageId: admitted.messageId, turnId: admitted.turnId, status: admitted.status };
  }

  /** The durable event journal, ordered by the per-session seq. */
  @Get(':id/events')
  async events(@TenantId() tenantId: string, @Param('id') id: string, @Query() q: EventsQueryDto) {
    const session = await this.find(tenantId, id);
    const limit = q.limit ?? 200;
    const rows = await this.db.event.findMany({
      where: { sessionId: session.id, seq: { gt: q.after ?? 0 } },
      orderBy: { seq: 'asc' },
      take: limit,
    });
    return {
      data: rows.map(presentEvent),
      lastSeq: rows.length > 0 ? rows[rows.length - 1].seq : (q.after ?? 0),
    };
  }
}
