import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import {
  AdmitMessageRequest,
  CreateAgentRequest,
  CreateApiKeyRequest,
  CreateSessionRequest,
  CreateTenantRequest,
  EventsQuery,
  ModelRoutes,
  PageQuery,
  UpdateAgentRequest,
  UpdateSettingsRequest,
  ToolSchemaMode,
} from '@switchboard/contracts';

/** Nest DTO classes over the contracts' zod schemas: validation and OpenAPI from one source. */
export class CreateTenantDto extends createZodDto(CreateTenantRequest) {}
export class CreateApiKeyDto extends createZodDto(CreateApiKeyRequest) {}
export class CreateAgentDto extends createZodDto(CreateAgentRequest) {}
export class UpdateAgentDto extends createZodDto(UpdateAgentRequest) {}
export class CreateSessionDto extends createZodDto(CreateSessionRequest) {}
export class AdmitMessageDto extends createZodDto(AdmitMessageRequest) {}
export class PageQueryDto extends createZodDto(PageQuery) {}
export class EventsQueryDto extends createZodDto(EventsQuery) {}
export class UpdateSettingsDto extends createZodDto(UpdateSettingsRequest) {}

/** Response of GET and PATCH /v1/settings (documentation only; presentSettings builds it). */
export class SettingsResponseDto extends createZodDto(
  z.object({
    modelRoutes: ModelRoutes,
    blockedTools: z.array(z.string()),
    toolSchemaMode: ToolSchemaMode,
    /** The deployment's DEFAULT_MODEL: what a hint resolves to when the tenant has not set its route. */
    defaultModel: z.string(),
  }),
) {}
