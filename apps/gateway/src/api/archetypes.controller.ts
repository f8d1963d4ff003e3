import { Controller, Get } from '@nestjs/common';
import { ArchetypeListResponse } from '@switchboard/contracts';
import { ARCHETYPES } from '@switchboard/subagents';
import { Operation, TenantApi } from '../platform/openapi';

/** The built-in archetypes every tenant has (seed 000; docs/adr/0025-archetypes-and-tiers.md). */
@TenantApi('agents')
@Controller('v1/archetypes')
export class ArchetypesController {
  @Get()
  @Operation({
    id: 'listArchetypes',
    summary: 'Built-in archetypes',
    description:
      'The archetypes every tenant has, usable as sub-agents by name and as `archetype` defaults of a new ' +
      'agent. An agent of the tenant with the same name overrides one.',
    status: 200,
    schema: ArchetypeListResponse,
  })
  list(): ArchetypeListResponse {
    return { data: ARCHETYPES.map((a) => ({ ...a, tools: [...a.tools] })) };
  }
}
