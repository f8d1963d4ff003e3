import { Controller, Get, Inject, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ModelList, ModelObject } from '@switchboard/contracts';
import { AgentsRepository } from '@switchboard/subagents';
import { KeyAgents, TenantId } from '../platform/auth/guard';
import { OpenAiError } from '@switchboard/protocols';
import { ErrorShapeOf } from '../platform/errors';
import { API_KEY_AUTH, OpenAiErrorResponses, schemaRef } from '../platform/openapi';

/** The most models one list shows (OpenAI's list has no paging): the most recently created names. */
export const MODELS_LIMIT = 1000;

const ERRORS: [number, string][] = [
  [401, 'Missing, invalid or revoked API key'],
  [404, 'No agent of the tenant with that name (`model_not_found`)'],
  [429, 'Rate limit exceeded (`rate_limited`): retry after Retry-After seconds'],
  [503, 'A dependency is unavailable: retry later'],
];

const errors = (codes: number[]) => ERRORS.filter(([status]) => codes.includes(status));

const present = (a: { name: string; createdAt: Date }): ModelObject => ({
  id: a.name,
  object: 'model',
  created: Math.floor(a.createdAt.getTime() / 1000),
  owned_by: 'switchboard',
});

/**
 * `GET /v1/models` and `GET /v1/models/{model}`, OpenAI-compatible: the tenant's agents, by name, as
 * the models a chat completion (`model`) can name, so OpenAI-compatible front-ends list them. Errors
 * in OpenAI's shape, as on `POST /v1/chat/completions`.
 */
@ApiTags('chat')
@ApiBearerAuth(API_KEY_AUTH)
@Controller('v1/models')
export class ModelsController {
  constructor(@Inject(AgentsRepository) private readonly agents: AgentsRepository) {}

  @Get()
  @ErrorShapeOf('openai')
  @ApiOperation({
    operationId: 'listModels',
    summary: `OpenAI-compatible: the tenant's agents as models, most recent first (at most ${MODELS_LIMIT})`,
    description:
      "The tenant's agents as OpenAI model objects (`id` = the agent's name), most recent first, so an OpenAI-compatible front-end can offer them in its model picker. Not paged: at most the " +
      `${MODELS_LIMIT} most recent; errors in OpenAI's shape.`,
  })
  @ApiResponse({ status: 200, description: 'The models', schema: schemaRef(ModelList) })
  @OpenAiErrorResponses(errors([401, 429, 503]))
  async list(@TenantId() tenantId: string, @KeyAgents() only: string[] | undefined): Promise<ModelList> {
    // A key limited to agents (docs/adr/0066) sees only those.
    return {
      object: 'list',
      data: (await this.agents.modelNames(tenantId, MODELS_LIMIT, only)).map(present),
    };
  }

  @Get(':model')
  @ErrorShapeOf('openai')
  @ApiOperation({
    operationId: 'retrieveModel',
    summary: 'OpenAI-compatible: one agent as a model, by name',
    description:
      "One agent as an OpenAI model object, by its name. 404 in OpenAI's error shape when the tenant has no agent of that name.",
  })
  @ApiResponse({ status: 200, description: 'The model', schema: schemaRef(ModelObject) })
  @OpenAiErrorResponses(errors([401, 404, 429, 503]))
  async get(
    @TenantId() tenantId: string,
    @Param('model') model: string,
    @KeyAgents() only: string[] | undefined,
  ): Promise<ModelObject> {
    const agentId = await this.agents.idByModel(tenantId, model);
    // Another agent than a limited key's is as unknown (docs/adr/0066).
    const reachable = agentId && (!only || only.includes(agentId.toLowerCase()));
    const agent = reachable ? await this.agents.find(tenantId, agentId) : null;
    if (!agent) {
      throw new OpenAiError(
        404,
        'model_not_found',
        `The model \`${model}\` does not exist: name an agent of the tenant (GET /v1/models)`,
        { param: 'model' },
      );
    }
    return present({ name: model, createdAt: agent.createdAt });
  }
}
