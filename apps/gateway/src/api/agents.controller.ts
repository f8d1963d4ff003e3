import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Put,
  Query,
} from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import {
  AgentDetailResponse,
  AgentPageResponse,
  AgentResponse,
  AgentScoresResponse,
  AgentVersionDiffResponse,
  AgentVersionNumber,
  AgentVersionPageResponse,
  AgentVersionResponse,
  AppError,
  CanaryResponse,
  newId,
  notFound,
  parseMemorySettings,
  parseTenantSettings,
  QueueName,
  type CreateAgentRequest,
} from '@switchboard/contracts';
import { enqueueMemoryEmbed } from '@switchboard/memory';
import {
  effectiveModels,
  modelCapabilities,
  takesImages,
  type EmbedderRegistry,
  type ResolvedModelRef,
} from '@switchboard/providers';
import type { Config } from '@switchboard/config';
import type { Prisma } from '@switchboard/database';
import {
  agentLearningStatus,
  agentScoreAggregates,
  agentToolStatus,
  sql,
  type SqlDb,
} from '@switchboard/store';
import {
  ARCHETYPE_TOOLS,
  archetype,
  AgentsRepository,
  AgentVersionsRepository,
  CanaryRepository,
  diffConfigs,
  refuseBuiltIn,
  type AgentConfig,
} from '@switchboard/subagents';
import { McpServersRepository, splitMcpToolName } from '@switchboard/mcp';
import type { ToolRegistry } from '@switchboard/tools';
import { refusedNotifyUrl } from '@switchboard/triage';
import { Actor, KeyAgents, TenantId } from '../platform/auth/guard';
import {
  AgentScoresQueryDto,
  AgentVersionDiffQueryDto,
  CreateAgentDto,
  PageQueryDto,
  RollbackAgentDto,
  StartCanaryDto,
  UpdateAgentDto,
} from './dto';
import { validateParam } from '../platform/validation';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import {
  decodeCursor,
  encodeCursor,
  pathId,
  presentAgent,
  presentAgentVersion,
  presentCanary,
} from './presenters';
import { CONFIG, EMBEDDERS, METRICS, TOOLS } from '@switchboard/platform';
import type { Metrics } from '@switchboard/observability';
import { GATEWAY_SQL } from './streams.controller';
import { agentStatus, agentStatuses } from '@switchboard/work-items';
import { presentLifecycle } from './agent-lifecycle.controller';

/** The embedders an agent may name (the built-in models, any `openai/<model>`). */

/** An embedder the registry cannot resolve (`local/nope`) is refused: 400, nothing written. */
const presentModelRef = (r: ResolvedModelRef) => ({
  ref: r.ref,
  route: r.route ?? null,
  capabilities: modelCapabilities(r.ref),
});

/** Resolved models as the agent's status shows them, each with its capability flags (docs/adr/0059). */
const presentModels = (m: { model: ResolvedModelRef; fallbackModels: ResolvedModelRef[] }) => ({
  model: presentModelRef(m.model),
  fallbackModels: m.fallbackModels.map(presentModelRef),
});

@TenantApi('agents')
@Controller('v1/agents')
export class AgentsController {
  constructor(
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(AgentVersionsRepository) private readonly versions: AgentVersionsRepository,
    @Inject(CanaryRepository) private readonly canaries: CanaryRepository,
    @Inject(McpServersRepository) private readonly mcpServers: McpServersRepository,
    @Inject(TOOLS) private readonly tools: ToolRegistry,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(GATEWAY_SQL) private readonly sql: SqlDb,
    @Inject(EMBEDDERS) private readonly embedders: EmbedderRegistry,
    @Inject(getQueueToken(QueueName.MemoryEmbed)) private readonly embedQueue: Queue,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {}

  /** An embedder the deployment does not have is refused (400) before anything is written (docs/adr/0049). */
  private checkEmbedder(ref: string | undefined): void {
    if (ref === undefined) return;
    try {
      this.embedders.resolve(ref);
    } catch {
      const message = `unknown embedder: ${ref}`;
      throw new AppError('validation_failed', message, {
        issues: [
          { path: 'embedder', message, available: ['local/words-100d', 'local/hash-256', 'openai/<model>'] },
        ],
      });
    }
  }

  /**
   * A webhook scorer's URL obeys the notify endpoint's address rules, up front (docs/adr/0062): a
   * private, loopback, link-local or metadata address is refused (400) unless
   * OUTBOUND_WEBHOOK_ALLOW_HOSTS exempts it; the hook checks again at send time.
   */
  private async checkScorers(scorers: CreateAgentRequest['scorers']): Promise<void> {
    const allow = new Set(this.config.OUTBOUND_WEBHOOK_ALLOW_HOSTS ?? []);
    for (const [i, s] of (scorers ?? []).entries()) {
      if (s.kind !== 'webhook') continue;
      const refused = await refusedNotifyUrl(s.url, allow);
      if (refused) {
        throw new AppError('validation_failed', `scorer ${s.name}: ${refused}`, {
          issues: [{ path: `scorers.${i}.url`, message: refused }],
        });
      }
    }
  }

  /**
   * A new or changed embedder (or none any more) starts the re-embedding job. A publish that fails
   * does not fail the change: the next write to the agent's memory publishes it again.
   */
  private async reembed(
    tenantId: string,
    agentId: string,
    before: string | null,
    after: string | null,
  ): Promise<void> {
    if (before === after) return;
    await enqueueMemoryEmbed(this.embedQueue, { tenantId, agentId }).catch(() => undefined);
  }

  /**
   * Tools a worker registers that the gateway does not run (sub-agent and memory tools, named by
   * the built-in archetypes) are known too.
   */
  private async checkTools(tenantId: string, tools: string[] | undefined, path = 'tools') {
    const unknown = this.tools.unknown(tools ?? []).filter((t) => !ARCHETYPE_TOOLS.has(t));
    // `server__tool` names an MCP tool (docs/adr/0023): known when the tenant has that server and,
    // once the server listed its tools, when the list has it.
    if (unknown.some((t) => splitMcpToolName(t))) {
      const mcp = await this.mcpServers.unknownTools(tenantId, unknown);
      unknown.splice(0, unknown.length, ...unknown.filter((t) => !splitMcpToolName(t) || mcp.includes(t)));
    }
    if (unknown.length > 0) {
      throw new AppError('validation_failed', `unknown tools: ${unknown.join(', ')}`, {
        issues: [{ path, message: `unknown tools: ${unknown.join(', ')}`, available: this.tools.names() }],
      });
    }
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'createAgent',
    summary: 'Create an agent',
    status: 201,
    schema: AgentResponse,
    description:
      '`archetype` naming a built-in archetype (GET /v1/archetypes) fills `tier`, `instructions`, `tools` ' +
      'and `model` from it when they are omitted; any other value is a free label. `allowedSubagents` ' +
      'names must resolve (an agent of the tenant, else a built-in archetype) and obey the tier rules ' +
      '(chat → reasoning | worker; reasoning → worker; worker → nothing): 400 otherwise, and 409 ' +
      "(details.referrers) when the new agent, overriding an archetype's name, would break another agent's list.",
    errors: [...BODY_ERRORS, 409],
  })
  async create(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Body() body: CreateAgentDto,
  ): Promise<AgentResponse> {
    const b = body;
    await this.checkTools(tenantId, b.tools);
    await this.checkTools(tenantId, b.approvalRequired, 'approvalRequired');
    await this.checkTools(tenantId, b.toolSelection?.pinned, 'toolSelection.pinned');
    this.checkEmbedder(b.embedder);
    await this.checkScorers(b.scorers);
    const base = b.archetype ? archetype(b.archetype) : undefined;
    const data = {
      id: newId(),
      tenantId,
      name: b.name,
      archetype: b.archetype ?? 'orchestrator',
      tier: b.tier ?? base?.tier ?? 'chat',
      instructions: b.instructions ?? base?.instructions ?? '',
      model: b.model ?? base?.model ?? this.config.DEFAULT_MODEL,
      fallbackModels: b.fallbackModels ?? [],
      // No tools unless named (by the agent or its archetype): a tool added to the deployment is never enabled silently.
      tools: b.tools ?? (base ? [...base.tools] : []),
      allowedSubagents: b.allowedSubagents ?? [],
      approvalRequired: b.approvalRequired ?? [],
      budgets: b.budgets ?? {},
      toolResultCompression: b.toolResultCompression ?? 'auto',
      archivist: b.archivist ?? {},
      toolSelection: b.toolSelection ?? {},
      embedder: b.embedder ?? null,
      memory: b.memory ?? {},
      maxActionsPerHour: b.maxActionsPerHour ?? null,
      scorers: (b.scorers ?? []) as Prisma.InputJsonValue,
    };
    const created = await this.agents.create(data, { actor });
    await this.reembed(tenantId, created.id, null, created.embedder);
    return presentAgent(created);
  }

  @Get()
  @Operation({
    id: 'listAgents',
    summary: 'Agents of the tenant, by id',
    description:
      "The tenant's agents by id (deleted ones are not listed), each with its `lifecycle` (as `status.lifecycle` of GET /v1/agents/:id). Paged by `limit` (default 50, at most 200) and `cursor` (the previous page's `nextCursor`).",
    status: 200,
    schema: AgentPageResponse,
    errors: [400],
  })
  async list(
    @TenantId() tenantId: string,
    @Query() q: PageQueryDto,
    @KeyAgents() only: string[] | undefined,
  ): Promise<AgentPageResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    // Built-in archetypes a sub-agent spawn materialised are listed too, marked `builtIn`.
    const page = await this.agents.page(tenantId, after?.[0], limit);
    // The page's lifecycles in one statement, not one read per agent.
    const lifecycles = await agentStatuses(
      this.sql,
      tenantId,
      page.rows.map((a) => a.id),
    );
    return {
      data: page.rows.flatMap((a) => {
        // A key limited to agents sees only those (docs/adr/0066).
        if (only && !only.includes(a.id.toLowerCase())) return [];
        const lifecycle = lifecycles.get(a.id);
        // Gone between the two reads (its row removed): left out.
        return lifecycle ? [{ ...presentAgent(a), lifecycle: presentLifecycle(lifecycle) }] : [];
      }),
      nextCursor: page.more ? encodeCursor([page.rows[page.rows.length - 1].id]) : null,
    };
  }

  private async find(tenantId: string, id: string) {
    const row = await this.agents.find(tenantId, pathId(id, 'agent'));
    if (!row) throw notFound('agent');
    return row;
  }

  @Get(':id')
  @Operation({
    id: 'getAgent',
    summary: 'An agent and its status',
    description:
      "`status.tools`: per tool, what the agent's calls did over its ended turns (calls, failures by " +
      'kind, latency), rolled up by the `learning` post-turn hook shortly after each turn ends. ' +
      '`status.lifecycle`: awake_idle | awake_running | awaiting_task | asleep | paused | stopped, why and ' +
      'since when, and its current work item. `status.effectiveModel`: the model and fallbacks its turns ' +
      "run on after the tenant's routes and the deployment default, each with its capability flags, and " +
      'what a turn with image input runs on (the vision route first). `status.learning`: whether learning ' +
      'feedback is on (`memory.learning`), the newest kept reflections and the user profile record.',
    status: 200,
    schema: AgentDetailResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<AgentDetailResponse> {
    const agent = await this.find(tenantId, id);
    const [tools, lifecycle, tenant, learning, canary] = await Promise.all([
      agentToolStatus(this.sql, { tenantId, agentId: agent.id }),
      agentStatus(this.sql, tenantId, agent.id),
      this.sql.first<{ settings: unknown }>(sql`SELECT settings FROM tenants WHERE id = ${tenantId}::uuid`),
      agentLearningStatus(this.sql, { tenantId, agentId: agent.id, limit: 5 }),
      this.canaries.find(tenantId, agent.id),
    ]);
    // Deleted since it was read.
    if (!lifecycle) throw notFound('agent');
    const routes = parseTenantSettings(tenant?.settings).modelRoutes;
    const refs = [agent.model, ...agent.fallbackModels];
    const text = effectiveModels(refs, routes, this.config.DEFAULT_MODEL);
    const images = effectiveModels(refs, routes, this.config.DEFAULT_MODEL, { images: true, takesImages });
    const seeing = [images.model, ...images.fallbackModels].filter((r) => takesImages(r.ref));
    return {
      ...presentAgent(agent),
      canary: canary ? presentCanary(canary) : null,
      status: {
        tools,
        lifecycle: presentLifecycle(lifecycle),
        effectiveModel: {
          ...presentModels(text),
          forImages:
            seeing.length > 0 ? presentModels({ model: seeing[0], fallbackModels: seeing.slice(1) }) : null,
        },
        learning: { enabled: parseMemorySettings(agent.memory).learning === true, ...learning },
      },
    };
  }

  @Patch(':id')
  @Operation({
    id: 'updateAgent',
    summary: 'Change fields of an agent',
    status: 200,
    schema: AgentResponse,
    description:
      'The tier rules are checked as on create, for this agent and for every agent listing it in ' +
      '`allowedSubagents`: a change of `tier` or `name` that would break such an agent is refused with 409 ' +
      "(details.referrers names them). A built-in archetype's row is read-only (409): create an agent " +
      'with its name to override it. A change of the versioned configuration (instructions, model, ' +
      'fallbackModels, tools, allowedSubagents, approvalRequired, budgets, toolResultCompression, archivist, ' +
      'toolSelection, embedder, memory, maxActionsPerHour, scorers) creates the next version (`version`, docs/adr/0061); ' +
      'a change that leaves it as it is creates none.',
    errors: [...BODY_ERRORS, 404, 409],
  })
  async update(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
    @Body() body: UpdateAgentDto,
  ): Promise<AgentResponse> {
    const agent = refuseBuiltIn(await this.find(tenantId, id));
    const b = body as Partial<CreateAgentRequest>;
    await this.checkTools(tenantId, b.tools);
    await this.checkTools(tenantId, b.approvalRequired, 'approvalRequired');
    await this.checkTools(tenantId, b.toolSelection?.pinned, 'toolSelection.pinned');
    this.checkEmbedder(b.embedder);
    await this.checkScorers(b.scorers);
    // The tier rules are checked when the change touches a name, a tier or a list (AgentsRepository.update).
    const row = await this.agents.update(agent, b, { actor });
    await this.reembed(tenantId, row.id, agent.embedder, row.embedder);
    return presentAgent(row);
  }

  /** A version number in the path: not a positive integer is a 400. */
  private versionOf(raw: string, name = 'version'): number {
    return validateParam(AgentVersionNumber, /^\d+$/.test(raw) ? raw : Number.NaN, name);
  }

  private async findVersion(tenantId: string, agentId: string, version: number) {
    const row = await this.versions.find(tenantId, agentId, version);
    if (!row) throw notFound('agent version');
    return row;
  }

  @Get(':id/versions')
  @Operation({
    id: 'listAgentVersions',
    summary: "An agent's configuration versions, newest first",
    description:
      'Every change of the versioned configuration (docs/adr/0061) is an immutable, numbered version; ' +
      'creating the agent wrote version 1. Paged by `limit` (default 50, at most 200) and `cursor`. 404 ' +
      "when the agent is not the calling tenant's.",
    status: 200,
    schema: AgentVersionPageResponse,
    errors: [400, 404],
  })
  async listVersions(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: PageQueryDto,
  ): Promise<AgentVersionPageResponse> {
    const agent = await this.find(tenantId, id);
    const before = decodeCursor<[number]>(q.cursor, ['number']);
    const page = await this.versions.page(tenantId, agent.id, before?.[0], q.limit ?? 50);
    return {
      data: page.rows.map(presentAgentVersion),
      nextCursor: page.more ? encodeCursor([page.rows[page.rows.length - 1].version]) : null,
    };
  }

  @Get(':id/scores')
  @Operation({
    id: 'getAgentScores',
    summary: "An agent's scores per version and day",
    description:
      "The agent's turn scores (docs/adr/0062) per version, UTC day, scorer and source over `from`..`to` " +
      '(dates or timestamps; a date `to` includes that day; default: the last 30 days), optionally of one ' +
      '`scorer` (`feedback` for feedback): `count` (rows scored with a score), `meanScore`, and `passRate` ' +
      '(share passed among those with a pass/fail; null when none has). 400 when `from` is not before `to`; ' +
      "404 when the agent is not the calling tenant's.",
    status: 200,
    schema: AgentScoresResponse,
    errors: [400, 404],
  })
  async scores(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: AgentScoresQueryDto,
  ): Promise<AgentScoresResponse> {
    const agent = await this.find(tenantId, id);
    const dateOnly = (v: string) => /^\d{4}-\d{2}-\d{2}$/.test(v);
    const to = q.to
      ? new Date(dateOnly(q.to) ? Date.parse(`${q.to}T00:00:00Z`) + 86_400_000 : Date.parse(q.to))
      : new Date();
    const from = q.from
      ? new Date(dateOnly(q.from) ? `${q.from}T00:00:00Z` : q.from)
      : new Date(to.getTime() - 30 * 86_400_000);
    if (!(from.getTime() < to.getTime())) {
      throw new AppError('validation_failed', '`from` must be before `to`', {
        issues: [{ path: 'from', message: 'must be before `to`' }],
      });
    }
    const data = await agentScoreAggregates(this.sql, {
      tenantId,
      agentId: agent.id,
      from,
      to,
      ...(q.scorer !== undefined ? { scorer: q.scorer } : {}),
    });
    return { data };
  }

  @Get(':id/versions/diff')
  @Operation({
    id: 'diffAgentVersions',
    summary: 'Two versions of an agent compared field by field',
    description:
      'Each value that differs from version `from` to version `to`: a field, or a key inside an object ' +
      'field (`budgets.maxUsd`, `memory.recall`), with its value in each (null: absent); arrays compare ' +
      'whole. An empty list: the two are equal. 400 for a version that is not a positive integer, 404 for ' +
      "one the agent does not have or an agent that is not the calling tenant's.",
    status: 200,
    schema: AgentVersionDiffResponse,
    errors: [400, 404],
  })
  async diffVersions(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: AgentVersionDiffQueryDto,
  ): Promise<AgentVersionDiffResponse> {
    const agent = await this.find(tenantId, id);
    const [from, to] = await Promise.all([
      this.findVersion(tenantId, agent.id, q.from),
      this.findVersion(tenantId, agent.id, q.to),
    ]);
    return {
      agentId: agent.id,
      from: from.version,
      to: to.version,
      changes: diffConfigs(from.config as AgentConfig, to.config as AgentConfig),
    };
  }

  @Get(':id/versions/:version')
  @Operation({
    id: 'getAgentVersion',
    summary: 'One version of an agent',
    description:
      "The version's stored configuration, who made it and why. 400 for a version that is not a positive " +
      "integer, 404 for one the agent does not have or an agent that is not the calling tenant's.",
    status: 200,
    schema: AgentVersionResponse,
    errors: [400, 404],
  })
  async getVersion(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('version') raw: string,
  ): Promise<AgentVersionResponse> {
    const version = this.versionOf(raw);
    const agent = await this.find(tenantId, id);
    return presentAgentVersion(await this.findVersion(tenantId, agent.id, version));
  }

  @Post(':id/rollback')
  @HttpCode(200)
  @Operation({
    id: 'rollbackAgent',
    summary: 'Roll an agent back to an earlier version',
    description:
      "Creates a NEW version whose configuration equals `version`'s (versions are never rewritten or " +
      "removed), makes it the agent's configuration and audits `agent.rolled_back`. Sessions following the " +
      'latest run on it from their next turn; pinned sessions keep their pin (docs/adr/0061). 404 for a ' +
      "version the agent does not have or an agent that is not the calling tenant's; the tier rules hold " +
      "as for PATCH (409). A built-in archetype's row is read-only (409). Nothing is written when it is refused.",
    status: 200,
    schema: AgentResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async rollback(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
    @Body() body: RollbackAgentDto,
  ): Promise<AgentResponse> {
    const agent = refuseBuiltIn(await this.find(tenantId, id));
    const target = await this.findVersion(tenantId, agent.id, body.version);
    const config = target.config as AgentConfig;
    // What the version names must still exist: a tool or embedder gone since is refused (400).
    await this.checkTools(tenantId, config.tools as string[] | undefined);
    this.checkEmbedder((config.embedder as string | null) ?? undefined);
    const row = await this.agents.rollback(
      agent,
      { version: target.version, config },
      { actor, note: body.note ?? `rollback to version ${target.version}` },
    );
    await this.reembed(tenantId, row.id, agent.embedder, row.embedder);
    return presentAgent(row);
  }

  @Put(':id/canary')
  @Operation({
    id: 'startCanary',
    summary: 'Start a canary of an agent version',
    description:
      "Pins `sharePercent` (0–100) of the agent's NEW sessions (POST /v1/sessions; chosen by a stable hash of " +
      "the session id) to `candidateVersion`, the rest to `baselineVersion` (default: the agent's current " +
      'version), until it is promoted, stopped or rolled back (docs/adr/0064). The hooks worker compares the ' +
      "two sides' mean online score (scorers and feedback since the start; only `scorer`'s when named) every " +
      'CANARY_EVAL_INTERVAL_MS and, once each side has `minScored` (default 20) scored turns, rolls the ' +
      "candidate back when its mean is below the baseline's by `margin` (default 0.1): status `rolled_back`, " +
      'and the sessions it pinned to the candidate are re-pinned to the baseline. Audited ' +
      '`agent.canary_started`. 400 for a version the agent does not have, a share outside 0–100 or a candidate ' +
      "equal to the baseline; 404 for an agent that is not the calling tenant's; 409 while another canary of " +
      "the agent runs, or for a built-in archetype's row. Nothing is written when it is refused.",
    status: 200,
    schema: CanaryResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async startCanary(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
    @Body() body: StartCanaryDto,
  ): Promise<CanaryResponse> {
    const agent = refuseBuiltIn(await this.find(tenantId, id));
    return presentCanary(await this.canaries.start(agent, body, actor));
  }

  @Get(':id/canary')
  @Operation({
    id: 'getCanary',
    summary: "An agent's canary",
    description:
      'The last canary started on the agent, whatever its status (running, promoted, rolled_back, stopped), ' +
      'with what the sweep last observed and how it ended (docs/adr/0064). 404 when the agent never had one ' +
      "or is not the calling tenant's.",
    status: 200,
    schema: CanaryResponse,
    errors: [404],
  })
  async getCanary(@TenantId() tenantId: string, @Param('id') id: string): Promise<CanaryResponse> {
    const agent = await this.find(tenantId, id);
    const canary = await this.canaries.find(tenantId, agent.id);
    if (!canary) throw notFound('canary');
    return presentCanary(canary);
  }

  @Post(':id/canary/promote')
  @HttpCode(200)
  @Operation({
    id: 'promoteCanary',
    summary: "Promote a running canary's candidate",
    description:
      "The candidate's configuration becomes the agent's as a new version (equal to it, as a rollback makes " +
      "one, docs/adr/0061; none when the candidate already is the agent's current version); new sessions get " +
      'it, pinned sessions keep their pin. Audited `agent.canary_promoted` (and `agent.version_created`). 404 ' +
      "when the agent never had a canary or is not the calling tenant's; 409 when its canary is not running. " +
      'Nothing is written when it is refused.',
    status: 200,
    schema: CanaryResponse,
    errors: [404, 409],
  })
  async promoteCanary(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
  ): Promise<CanaryResponse> {
    const agent = refuseBuiltIn(await this.find(tenantId, id));
    const { canary, agent: row } = await this.canaries.promote(agent, actor);
    this.metrics.canaryDecisions.inc({ outcome: 'promoted' });
    await this.reembed(tenantId, row.id, agent.embedder, row.embedder);
    return presentCanary(canary);
  }

  @Delete(':id/canary')
  @HttpCode(200)
  @Operation({
    id: 'stopCanary',
    summary: 'Stop a running canary',
    description:
      "New sessions get the agent's current version again; sessions the canary pinned keep their pin " +
      '(PATCH /v1/sessions/{id} re-pins). Audited `agent.canary_stopped`. 404 when the agent never had a ' +
      "canary or is not the calling tenant's; 409 when its canary is not running. Nothing is written when it is refused.",
    status: 200,
    schema: CanaryResponse,
    errors: [404, 409],
  })
  async stopCanary(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
  ): Promise<CanaryResponse> {
    const agent = await this.find(tenantId, id);
    const canary = await this.canaries.stop(tenantId, agent.id, actor);
    this.metrics.canaryDecisions.inc({ outcome: 'stopped' });
    return presentCanary(canary);
  }

  /** Soft delete: existing sessions keep their history; no new session can use the agent. */
  @Delete(':id')
  @HttpCode(204)
  @Operation({
    id: 'deleteAgent',
    summary: 'Delete an agent (soft)',
    description:
      "409 when an agent listing it in `allowedSubagents` would break (details.referrers), or for a built-in archetype's row.",
    status: 204,
    errors: [404, 409],
  })
  async remove(@TenantId() tenantId: string, @Param('id') id: string): Promise<void> {
    const agent = refuseBuiltIn(await this.find(tenantId, id));
    await this.agents.softDelete(agent);
  }
}
