import { Body, Controller, Get, Inject, Param, Post, Res } from '@nestjs/common';
import { ApiBody } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { TurnSteering } from '@switchboard/admission';
import { CancelTurnRequest, notFound, TurnResponse } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { TenantId } from '../platform/auth/guard';
import { CancelTurnDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { pathId, presentTurn } from './presenters';
import { validateOptionalBody } from '../platform/validation';
import { DB, TASKS } from '@switchboard/platform';
import type { TaskService } from '@switchboard/subagents';
import { turnDetail } from './turn-detail';
import { TURN_STEERING } from './turn-steering';
import { findTurn, readTurn } from '@switchboard/store';
import { GATEWAY_READS, type GatewayReads } from './reads';

@TenantApi('turns')
@Controller('v1/turns')
export class TurnsController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(TURN_STEERING) private readonly control: TurnSteering,
    @Inject(TASKS) private readonly tasks: TaskService,
    @Inject(GATEWAY_READS) private readonly reads: GatewayReads,
  ) {}

  /** Status, final text, stop reason, usage, cost, tool calls and the provider attempt timeline. */
  @Get(':id')
  @Operation({
    id: 'getTurn',
    summary: 'A turn',
    description:
      "A turn: status, final text, stop reason, usage and cost, tool calls and the provider attempt timeline. 404 when it is not the calling tenant's.",
    status: 200,
    schema: TurnResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<TurnResponse> {
    // Its sub-agent tasks (docs/adr/0024) and their cost (docs/adr/0025), as `wait` on admission adds them.
    const turnId = pathId(id, 'turn');
    // On the read replica once it has replayed the primary's position (docs/adr/0042).
    const turn = await this.reads.read(({ sql }) => readTurn(sql, tenantId, turnId));
    if (!turn) throw notFound('turn');
    return turnDetail(this.tasks)(tenantId, turn);
  }

  /**
   * Cancels a turn (docs/adr/0014). A queued turn, or one awaiting approval, ends at once: 200 with
   * the turn, `cancelled`. A running turn is stopped by its worker at the next safe point: 202 with
   * the turn as it stands (`running`, `cancelRequestedAt` set); it ends `cancelled` with
   * `turn_cancelled` journaled. A turn that already ended is answered 200 as it is, unchanged.
   */
  @Post(':id/cancel')
  @Operation({
    id: 'cancelTurn',
    summary: 'Cancel a turn',
    description:
      'Cancels a turn (docs/adr/0014). A queued turn, or one awaiting approval, ends at once (200, `cancelled`); a running turn is stopped by its worker at the next safe point (202, `cancelRequestedAt` set). Cancelling an ended turn changes nothing and answers it as it is, so a repeat is harmless.',
    status: 202,
    schema: TurnResponse,
    response:
      'The turn is running: the cancel is recorded and its worker stops it at the next safe point ' +
      '(before a provider call or a tool); the turn as it stands, with cancelRequestedAt.',
    alternative: {
      status: 200,
      schema: TurnResponse,
      description:
        'The turn has ended: it was queued or awaiting approval and is now cancelled, or it had ' +
        'already ended (a repeated cancel changes nothing).',
    },
    errors: [...BODY_ERRORS, 404],
  })
  @ApiBody({ type: CancelTurnDto, required: false })
  async cancel(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() raw: unknown,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const turnId = pathId(id, 'turn');
    const body = validateOptionalBody(CancelTurnRequest, raw);
    const result = await this.control.cancel(tenantId, turnId, body.reason);
    if (!result) throw notFound('turn');
    const turn = await this.find(tenantId, turnId);
    await reply.status(turn.status === 'running' ? 202 : 200).send(turn);
  }

  private async find(tenantId: string, id: string): Promise<TurnResponse> {
    const turn = await findTurn(this.db, tenantId, id);
    if (!turn) throw notFound('turn');
    return presentTurn(turn);
  }
}
