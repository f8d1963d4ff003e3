import { Body, Controller, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import { ApiBody } from '@nestjs/swagger';
import type { Queue } from 'bullmq';
import type { TurnSteering } from '@switchboard/admission';
import {
  AgentLifecycleResponse,
  AgentPostureRequest,
  Jobs,
  notFound,
  QueueName,
} from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { LOGGER } from '@switchboard/platform';
import { publish, withTimeout } from '@switchboard/queue';
import { TurnStore, type SqlDb } from '@switchboard/store';
import { AgentsRepository } from '@switchboard/subagents';
import { wakeTenant } from '@switchboard/turns';
import { agentStatus, setPosture, type LifecycleStatus, type Posture } from '@switchboard/work-items';
import { TenantId } from '../platform/auth/guard';
import { AgentPostureDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { pathId } from './presenters';
import { validateOptionalBody } from '../platform/validation';
import { GATEWAY_SQL } from './streams.controller';
import { TURN_STEERING } from './turn-steering';

export const presentLifecycle = (l: LifecycleStatus): AgentLifecycleResponse => ({
  state: l.state,
  why: l.why,
  since: l.since.toISOString(),
  until: l.until?.toISOString() ?? null,
  hint: l.hint,
  currentWorkItemId: l.currentWorkItemId,
});

/**
 * The operator's pause, resume and stop of one agent (SPEC §3, seed 002 "Agent State" and the stopped
 * boundary; docs/adr/0031). Paused: its queued turns and work are held (a running turn finishes).
 * Stopped: held too, every new admission for it answers 409 agent_stopped, storing nothing, and its
 * running and waiting turns are cancelled, reason `agent_stopped` (docs/adr/0055).
 * Resume: what was held runs (each session with turns is woken, and its work is activated).
 */
@TenantApi('agents')
@Controller('v1/agents/:id')
export class AgentLifecycleController {
  private readonly store: TurnStore;

  constructor(
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(GATEWAY_SQL) private readonly sql: SqlDb,
    @InjectQueue(QueueName.Turns) private readonly turns: Queue,
    @InjectQueue(QueueName.Work) private readonly work: Queue,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(TURN_STEERING) private readonly control: TurnSteering,
  ) {
    this.store = new TurnStore(sql);
  }

  private async change(tenantId: string, id: string, posture: Posture, raw: unknown): Promise<string> {
    const body = posture === 'active' ? {} : validateOptionalBody(AgentPostureRequest, raw);
    const agent = await this.agents.find(tenantId, pathId(id, 'agent'));
    if (!agent) throw notFound('agent');
    const changed = await setPosture(this.sql, tenantId, agent.id, posture, body.reason ?? null);
    if (!changed) throw notFound('agent');
    // Stopped after the posture is written, so nothing new starts while they are cancelled; a repeated
    // stop cancels whatever a cut-short one left (docs/adr/0055).
    if (posture === 'stopped') await this.control.cancelAgentTurns(tenantId, agent.id, body.reason);
    return agent.id;
  }

  private async status(tenantId: string, agentId: string): Promise<AgentLifecycleResponse> {
    const status = await agentStatus(this.sql, tenantId, agentId);
    if (!status) throw notFound('agent');
    return presentLifecycle(status);
  }

  @Post('pause')
  @HttpCode(200)
  @Operation({
    id: 'pauseAgent',
    summary: 'Pause an agent: its queued turns and work wait until it is resumed',
    description: 'Admission goes on (messages queue); nothing new starts. A turn already running finishes.',
    status: 200,
    schema: AgentLifecycleResponse,
    errors: [...BODY_ERRORS, 404],
  })
  @ApiBody({ type: AgentPostureDto, required: false })
  async pause(@TenantId() tenantId: string, @Param('id') id: string, @Body() raw: unknown) {
    return this.status(tenantId, await this.change(tenantId, id, 'paused', raw));
  }

  @Post('stop')
  @HttpCode(200)
  @Operation({
    id: 'stopAgent',
    summary: 'Stop an agent: its running turns are cancelled and nothing new is admitted until it is resumed',
    description:
      'Every admission for it (API messages, chat completions, webhook deliveries, schedule fires, runtime ' +
      'ticks) is refused with 409 agent_stopped and stores nothing; queued turns are held. Its running turns, ' +
      'and those waiting for an approval, a sub-agent or client tools, are cancelled with cancelReason ' +
      '`agent_stopped` (the optional `reason` is their cancelNote; docs/adr/0055). Pause instead lets a running turn finish.',
    status: 200,
    schema: AgentLifecycleResponse,
    errors: [...BODY_ERRORS, 404],
  })
  @ApiBody({ type: AgentPostureDto, required: false })
  async stop(@TenantId() tenantId: string, @Param('id') id: string, @Body() raw: unknown) {
    return this.status(tenantId, await this.change(tenantId, id, 'stopped', raw));
  }

  @Post('resume')
  @HttpCode(200)
  @Operation({
    id: 'resumeAgent',
    summary: 'Resume a paused or stopped agent: what was held runs',
    description:
      'Resumes a paused or stopped agent: its held turns and work run again. Resuming an agent that is neither paused nor stopped changes nothing; 404 for an unknown agent.',
    status: 200,
    schema: AgentLifecycleResponse,
    errors: [404],
  })
  async resume(@TenantId() tenantId: string, @Param('id') id: string) {
    const agentId = await this.change(tenantId, id, 'active', undefined);
    // Held turns: a wake-up per session with turns to run (a Redis that is away leaves them to the
    // reconciler); held work: an activation pass.
    const woken = await wakeTenant(this.store, this.turns, this.logger, tenantId);
    try {
      const job = publish(this.work, Jobs.work, { tenantId, agentId, cause: `resume-${Date.now()}` });
      job.catch(() => undefined);
      await withTimeout(job, 2000);
    } catch (err) {
      this.logger.warn({ err, agentId }, 'work activation not requested after resume; the sweep will');
    }
    this.logger.info({ tenantId, agentId, woken }, 'agent resumed');
    return this.status(tenantId, agentId);
  }
}
