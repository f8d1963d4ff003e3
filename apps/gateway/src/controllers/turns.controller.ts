import { Controller, Get, Inject, Param } from '@nestjs/common';
import { notFound, TurnResponse } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { TenantId } from '../auth/guard';
import { Operation, TenantApi } from '../http/openapi';
import { pathId, presentTurn } from '../http/presenters';
import { DB } from '@switchboard/platform';

@TenantApi('turns')
@Controller('v1/turns')
export class TurnsController {
  constructor(@Inject(DB) private readonly db: Db) {}

  /** Status, final text, stop reason, usage, cost, tool calls and the provider attempt timeline. */
  @Get(':id')
  @Operation({ id: 'getTurn', summary: 'A turn', status: 200, schema: TurnResponse, errors: [404] })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<TurnResponse> {
    const turn = await this.db.turn.findFirst({
      where: { id: pathId(id, 'turn'), tenantId },
      include: { toolCalls: { orderBy: { startedAt: 'asc' } } },
    });
    if (!turn) throw notFound('turn');
    return presentTurn(turn);
  }
}
