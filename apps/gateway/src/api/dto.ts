import { createZodDto } from 'nestjs-zod';
import {
  LangGraphAssistantSearchRequest,
  LangGraphCancelQuery,
  LangGraphHistoryQuery,
  LangGraphHistoryRequest,
  LangGraphJoinQuery,
  LangGraphJoinStreamQuery,
  LangGraphRunListQuery,
  LangGraphRunRequest,
  LangGraphStateAtRequest,
  LangGraphStateQuery,
  LangGraphThreadCreateRequest,
  LangGraphThreadSearchRequest,
  LangGraphUpdateStateRequest,
  AdmitMessageRequest,
  CancelTurnRequest,
  TurnFeedbackRequest,
  AgentScoresQuery,
  ReplayTurnRequest,
  AgentVersionDiffQuery,
  RollbackAgentRequest,
  StartCanaryRequest,
  UpdateSessionRequest,
  ClientToolResultsRequest,
  ApprovalsQuery,
  DecideApprovalRequest,
  AnswerTaskRequest,
  CreateAgentRequest,
  CreateApiKeyRequest,
  CreateSessionRequest,
  ForkSessionRequest,
  RewindSessionRequest,
  CreateScheduleRequest,
  CreateMcpServerRequest,
  UpdateMcpServerRequest,
  CreateTenantRequest,
  CreateTriggerRequest,
  EventsQuery,
  PageQuery,
  SessionsQuery,
  ActiveTurnsQuery,
  TriggersQuery,
  RotateTriggerRequest,
  StreamQuery,
  UpdateAgentRequest,
  UpdateScheduleRequest,
  UpdateRateLimitsRequest,
  UpdateSettingsRequest,
  UsageQuery,
  AddMemoryRequest,
  MemoryBlockVersionsQuery,
  PutMemoryBlockRequest,
  MemoryQuery,
  MemoryRecordQuery,
  UpdateTenantRequest,
  AuditEventsQuery,
  AdminAuditEventsQuery,
  PauseTenantRequest,
  ResumeTenantRequest,
  CreateWorkItemRequest,
  WorkItemsQuery,
  CompleteWorkItemRequest,
  CancelWorkItemRequest,
  AgentPostureRequest,
  ChatCompletionRequest,
  CreateResponseRequest,
  CompactResponseRequest,
  RetrieveResponseQuery,
  InputItemsQuery,
  AddDatasetItemsRequest,
  CreateDatasetRequest,
  CreateExperimentRequest,
  DatasetItemFromTurnRequest,
  ExperimentsQuery,
} from '@switchboard/contracts';

/** Nest DTO classes over the contracts' zod schemas: validation and OpenAPI from one source. */
export class CreateTenantDto extends createZodDto(CreateTenantRequest) {}
export class UpdateRateLimitsDto extends createZodDto(UpdateRateLimitsRequest) {}
export class UpdateTenantDto extends createZodDto(UpdateTenantRequest) {}
export class PauseTenantDto extends createZodDto(PauseTenantRequest) {}
export class ResumeTenantDto extends createZodDto(ResumeTenantRequest) {}
export class AuditEventsQueryDto extends createZodDto(AuditEventsQuery) {}
export class AdminAuditEventsQueryDto extends createZodDto(AdminAuditEventsQuery) {}
export class CreateApiKeyDto extends createZodDto(CreateApiKeyRequest) {}
export class CreateAgentDto extends createZodDto(CreateAgentRequest) {}
export class UpdateAgentDto extends createZodDto(UpdateAgentRequest) {}
export class CreateSessionDto extends createZodDto(CreateSessionRequest) {}
export class AdmitMessageDto extends createZodDto(AdmitMessageRequest) {}
export class ForkSessionDto extends createZodDto(ForkSessionRequest) {}
export class RewindSessionDto extends createZodDto(RewindSessionRequest) {}
export class CancelTurnDto extends createZodDto(CancelTurnRequest) {}
export class TurnFeedbackDto extends createZodDto(TurnFeedbackRequest) {}
export class AgentScoresQueryDto extends createZodDto(AgentScoresQuery) {}
export class ReplayTurnDto extends createZodDto(ReplayTurnRequest) {}
export class ClientToolResultsDto extends createZodDto(ClientToolResultsRequest) {}
export class PageQueryDto extends createZodDto(PageQuery) {}
export class SessionsQueryDto extends createZodDto(SessionsQuery) {}
export class ActiveTurnsQueryDto extends createZodDto(ActiveTurnsQuery) {}
export class TriggersQueryDto extends createZodDto(TriggersQuery) {}
export class EventsQueryDto extends createZodDto(EventsQuery) {}
export class StreamQueryDto extends createZodDto(StreamQuery) {}
export class UpdateSettingsDto extends createZodDto(UpdateSettingsRequest) {}
export class ApprovalsQueryDto extends createZodDto(ApprovalsQuery) {}
export class DecideApprovalDto extends createZodDto(DecideApprovalRequest) {}
export class AnswerTaskDto extends createZodDto(AnswerTaskRequest) {}
export class CreateTriggerDto extends createZodDto(CreateTriggerRequest) {}
export class RotateTriggerDto extends createZodDto(RotateTriggerRequest) {}
export class CreateScheduleDto extends createZodDto(CreateScheduleRequest) {}
export class UpdateScheduleDto extends createZodDto(UpdateScheduleRequest) {}
export class UsageQueryDto extends createZodDto(UsageQuery) {}
export class CreateMcpServerDto extends createZodDto(CreateMcpServerRequest) {}
export class UpdateMcpServerDto extends createZodDto(UpdateMcpServerRequest) {}
export class MemoryQueryDto extends createZodDto(MemoryQuery) {}
export class AddMemoryDto extends createZodDto(AddMemoryRequest) {}
export class MemoryRecordQueryDto extends createZodDto(MemoryRecordQuery) {}
export class PutMemoryBlockDto extends createZodDto(PutMemoryBlockRequest) {}
export class MemoryBlockVersionsQueryDto extends createZodDto(MemoryBlockVersionsQuery) {}
export class CreateWorkItemDto extends createZodDto(CreateWorkItemRequest) {}
export class WorkItemsQueryDto extends createZodDto(WorkItemsQuery) {}
export class CompleteWorkItemDto extends createZodDto(CompleteWorkItemRequest) {}
export class CancelWorkItemDto extends createZodDto(CancelWorkItemRequest) {}
export class AgentPostureDto extends createZodDto(AgentPostureRequest) {}
export class ChatCompletionDto extends createZodDto(ChatCompletionRequest) {}
export class CreateResponseDto extends createZodDto(CreateResponseRequest) {}
export class CompactResponseDto extends createZodDto(CompactResponseRequest) {}
export class RetrieveResponseQueryDto extends createZodDto(RetrieveResponseQuery) {}
export class InputItemsQueryDto extends createZodDto(InputItemsQuery) {}

// The LangGraph adapter (docs/adr/0038).
export class LangGraphAssistantSearchDto extends createZodDto(LangGraphAssistantSearchRequest) {}
export class LangGraphThreadCreateDto extends createZodDto(LangGraphThreadCreateRequest) {}
export class LangGraphThreadSearchDto extends createZodDto(LangGraphThreadSearchRequest) {}
export class LangGraphHistoryDto extends createZodDto(LangGraphHistoryRequest) {}
export class LangGraphRunDto extends createZodDto(LangGraphRunRequest) {}
export class LangGraphRunListQueryDto extends createZodDto(LangGraphRunListQuery) {}
export class LangGraphCancelQueryDto extends createZodDto(LangGraphCancelQuery) {}
export class LangGraphJoinQueryDto extends createZodDto(LangGraphJoinQuery) {}
export class LangGraphJoinStreamQueryDto extends createZodDto(LangGraphJoinStreamQuery) {}
export class LangGraphHistoryQueryDto extends createZodDto(LangGraphHistoryQuery) {}
export class LangGraphStateAtDto extends createZodDto(LangGraphStateAtRequest) {}
export class LangGraphStateQueryDto extends createZodDto(LangGraphStateQuery) {}
export class LangGraphUpdateStateDto extends createZodDto(LangGraphUpdateStateRequest) {}
export class AgentVersionDiffQueryDto extends createZodDto(AgentVersionDiffQuery) {}
export class RollbackAgentDto extends createZodDto(RollbackAgentRequest) {}
export class StartCanaryDto extends createZodDto(StartCanaryRequest) {}
export class UpdateSessionDto extends createZodDto(UpdateSessionRequest) {}
export class CreateDatasetDto extends createZodDto(CreateDatasetRequest) {}
export class AddDatasetItemsDto extends createZodDto(AddDatasetItemsRequest) {}
export class DatasetItemFromTurnDto extends createZodDto(DatasetItemFromTurnRequest) {}
export class CreateExperimentDto extends createZodDto(CreateExperimentRequest) {}
export class ExperimentsQueryDto extends createZodDto(ExperimentsQuery) {}
