import { Controller, Get, Inject, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { notFound } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { TenantId } from '../auth/guard';
import { pathId, presentTurn } from '../http/presenters';
import { DB } from '@switchboard/platform';

@ApiTags('turns')
@ApiBearerAuth()
@Controller('v1/turns')
export class TurnsController {
  constructor(@Inject(DB) private readonly db: Db) {}

  /** Status, final text, stop reason, usage, cost, tool calls and the provider attempt timeline. */
  @Get(':id')
  async get(@TenantId() tenantId: string, @Param('id') id: string) {
    const turn = await this.db.turn.findFirst({
      where: { id: pathId(id, 'turn'), tenantId },
      include: { toolCalls: { orderBy: { startedAt: 'asc' } } },
    });
    if (!turn) throw notFound('turn');
    return presentTurn(turn);
  }
}
