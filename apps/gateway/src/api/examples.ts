import type { z } from 'zod';
import {
  AddMemoryDto,
  AdmitMessageDto,
  AgentPostureDto,
  AnswerTaskDto,
  CancelTurnDto,
  TurnFeedbackDto,
  ReplayTurnDto,
  RollbackAgentDto,
  StartCanaryDto,
  UpdateSessionDto,
  ClientToolResultsDto,
  CancelWorkItemDto,
  ChatCompletionDto,
  CreateResponseDto,
  CompactResponseDto,
  CompleteWorkItemDto,
  CreateAgentDto,
  CreateApiKeyDto,
  CreateMcpServerDto,
  CreateScheduleDto,
  CreateSessionDto,
  CreateTenantDto,
  CreateTriggerDto,
  CreateWorkItemDto,
  DecideApprovalDto,
  ForkSessionDto,
  LangGraphAssistantSearchDto,
  LangGraphHistoryDto,
  LangGraphRunDto,
  LangGraphStateAtDto,
  LangGraphThreadCreateDto,
  LangGraphThreadSearchDto,
  LangGraphUpdateStateDto,
  PauseTenantDto,
  PutMemoryBlockDto,
  ResumeTenantDto,
  RewindSessionDto,
  RotateTriggerDto,
  UpdateAgentDto,
  UpdateMcpServerDto,
  UpdateRateLimitsDto,
  UpdateScheduleDto,
  UpdateSettingsDto,
  UpdateTenantDto,
  CreateDatasetDto,
  AddDatasetItemsDto,
  DatasetItemFromTurnDto,
  CreateExperimentDto,
} from './dto';

/** A request DTO: its class name is its component's name in the OpenAPI document. */
interface RequestDto<S extends z.ZodType = z.ZodType> {
  name: string;
  schema: S;
}

/** A request body example, typed by the DTO's schema (and parsed by it in examples.spec.ts). */
export interface RequestExample {
  dto: RequestDto;
  value: unknown;
}

const example = <S extends z.ZodType>(dto: RequestDto<S>, value: z.input<S>): RequestExample => ({
  dto,
  value,
});

const AGENT_ID = '0197a3c2-5d1e-7c4b-9f0a-3e2d1c0b9a87';
const SESSION_ID = '0197a3c4-1b2a-7d3e-8f4c-5a6b7c8d9e0f';

/**
 * A realistic example of every JSON request body, shown by the Swagger UI and set as the request
 * body's `example` in the OpenAPI document (`createOpenApiDocument`). test/e2e/openapi.e2e.spec.ts
 * fails on a JSON request body without one; examples.spec.ts parses each with its DTO's schema.
 */
export const REQUEST_EXAMPLES: RequestExample[] = [
  example(CreateTenantDto, { name: 'acme-support' }),
  example(UpdateTenantDto, {
    maxConcurrentTurns: 20,
    share: 2,
    dailySpendLimitUsd: 150,
    maxActionsPerHour: 500,
  }),
  example(UpdateRateLimitsDto, { admission: 1200, reads: 6000, webhooks: null }),
  example(PauseTenantDto, { reason: 'invoice overdue: paused until billing confirms payment' }),
  example(ResumeTenantDto, {}),
  example(CreateApiKeyDto, { name: 'ci-deploy-bot', role: 'developer' }),
  example(CreateAgentDto, {
    name: 'support-triage',
    tier: 'chat',
    instructions:
      'You answer customer questions about Acme Cloud. Look things up before answering; hand billing disputes to a human.',
    model: 'openai/gpt-4.1-mini',
    fallbackModels: ['anthropic/claude-sonnet-4-5'],
    tools: ['http_fetch', 'current_time'],
    approvalRequired: ['http_fetch'],
    budgets: { maxIterations: 12, maxUsd: 0.5, deadlineMs: 120_000 },
  }),
  example(UpdateAgentDto, {
    instructions: 'You answer customer questions about Acme Cloud in the customer’s language.',
    budgets: { maxIterations: 16, maxUsd: 1 },
  }),
  example(CreateSessionDto, {
    agentId: AGENT_ID,
    title: 'Ticket #4821: cannot reset password',
    metadata: { ticketId: 4821, channel: 'email' },
  }),
  example(AdmitMessageDto, {
    content: 'My password reset link expired twice. Can you check what is wrong with my account?',
    metadata: { from: 'jane@example.com' },
    wait: 30,
  }),
  example(CancelTurnDto, { reason: 'the customer closed the ticket' }),
  example(TurnFeedbackDto, {
    rating: 'down',
    label: 'wrong_account',
    comment: 'Looked up the wrong customer.',
    by: 'agent-jane',
  }),
  example(ReplayTurnDto, {
    model: 'anthropic/claude-sonnet-4-5',
    instructions: 'You are a support agent. Answer in two sentences at most.',
    agentVersion: 3,
  }),
  example(RollbackAgentDto, { version: 2, note: 'v3 prompt answers too tersely; back to v2' }),
  example(StartCanaryDto, { candidateVersion: 4, sharePercent: 10, margin: 0.1, minScored: 20 }),
  example(UpdateSessionDto, { agentVersion: 2 }),
  example(ClientToolResultsDto, {
    results: [{ callId: 'call_019a4f3c2b7e7c1d9a0e5f6b7c8d9e0f', output: '{"temp_c":21,"sky":"sunny"}' }],
  }),
  example(AnswerTaskDto, { answer: 'Use the EU region: the customer is in Germany.' }),
  example(ForkSessionDto, {
    turnId: '0193f2a4-7c1e-7d52-9b1a-3f6e2d8c4b10',
    position: 'after',
    model: 'anthropic/claude-sonnet-4-5',
    instructions: 'You answer customer questions about Acme Cloud. Offer a refund before escalating.',
    title: 'Ticket #4821: try the refund-first prompt',
  }),
  example(RewindSessionDto, { turnId: '0193f2a4-7c1e-7d52-9b1a-3f6e2d8c4b10' }),
  example(DecideApprovalDto, { decision: 'approve', reason: 'read-only status page fetch' }),
  example(UpdateSettingsDto, {
    modelRoutes: { reasoning: 'anthropic/claude-sonnet-4-5', burst: null },
    blockedTools: ['http_fetch'],
    dailySpendLimitUsd: 50,
  }),
  example(CreateTriggerDto, {
    agentId: AGENT_ID,
    name: 'github-issues',
    scheme: 'github',
    rules: [
      { match: { eventType: 'issues', path: 'action', equals: 'opened' }, action: 'spawn_reactor' },
      { match: { eventType: 'issues' }, action: 'drop', reason: 'only new issues start a turn' },
    ],
  }),
  example(RotateTriggerDto, { graceSeconds: 3600 }),
  example(CreateScheduleDto, {
    agentId: AGENT_ID,
    cron: '0 9 * * 1-5',
    timezone: 'Europe/Paris',
    payload: { text: 'Summarise the tickets opened since yesterday 09:00.' },
  }),
  example(UpdateScheduleDto, { enabled: false }),
  example(CreateMcpServerDto, {
    name: 'linear',
    url: 'https://mcp.linear.app/mcp',
    auth: { header: 'Authorization', value: 'Bearer lin_api_0123456789abcdef' },
    timeoutMs: 20_000,
    approval: 'side_effects',
  }),
  example(UpdateMcpServerDto, { approval: 'destructive_only', timeoutMs: 45_000 }),
  example(AddMemoryDto, {
    content:
      'Acme Cloud resets passwords through SSO for enterprise accounts: the reset link does not apply there.',
    title: 'Password resets on enterprise accounts',
    kind: 'fact',
  }),
  example(PutMemoryBlockDto, {
    content: 'The customer is Acme Cloud; their admins prefer answers with links to the runbook.',
    description: 'Who the agent works for',
    limitChars: 2000,
    readOnly: false,
    expectedVersion: 3,
  }),
  example(CreateWorkItemDto, {
    objective: 'Triage the 12 open tickets tagged "billing" and draft a reply for each.',
    planStatus: 'draft',
    todoList: [
      { text: 'List the open billing tickets', state: 'pending' },
      { text: 'Draft a reply per ticket', state: 'pending' },
    ],
  }),
  example(CompleteWorkItemDto, { summary: 'Replied to 12 billing tickets; 2 escalated to finance.' }),
  example(CancelWorkItemDto, { reason: 'superseded by the new billing workflow' }),
  example(AgentPostureDto, { reason: 'provider incident: holding new work until it is resolved' }),
  example(ChatCompletionDto, {
    model: 'support-triage',
    messages: [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'What is the status of ticket #4821?' },
    ],
    stream: false,
    metadata: { session_id: SESSION_ID },
  }),
  example(CreateResponseDto, {
    model: 'support-triage',
    input: 'And what did the customer say last?',
    previous_response_id: 'resp_0197a3c61f2a7b3c8d4e5f60718293a4',
    background: false,
    stream: false,
  }),
  example(CompactResponseDto, {
    model: 'support-triage',
    input: [
      { role: 'user', content: 'The customer wants a refund for order 1042.' },
      { role: 'assistant', content: 'Refund issued; the customer was told.' },
    ],
  }),
  // The LangGraph adapter (docs/adr/0038).
  example(LangGraphAssistantSearchDto, { graph_id: 'support-triage', limit: 10, offset: 0 }),
  example(LangGraphThreadCreateDto, { metadata: { graph_id: 'support-triage', customer: 'acme' } }),
  example(LangGraphThreadSearchDto, { metadata: { customer: 'acme' }, status: 'interrupted', limit: 10 }),
  example(LangGraphHistoryDto, {
    limit: 10,
    before: { checkpoint_id: '01938a7e-5b2c-7d10-8f00-00000000c0de' },
  }),
  example(LangGraphStateAtDto, {
    checkpoint: {
      thread_id: '01938a7e-5b2c-7d10-8f00-00000000beef',
      checkpoint_ns: '',
      checkpoint_id: '01938a7e-5b2c-7d10-8f00-00000000c0de',
    },
  }),
  // updateState with no values: the thread goes on from that checkpoint (docs/adr/0038, time travel).
  example(LangGraphUpdateStateDto, {
    checkpoint_id: '01938a7e-5b2c-7d10-8f00-00000000c0de',
    as_node: '__copy__',
  }),
  example(LangGraphRunDto, {
    assistant_id: 'support-triage',
    input: { messages: [{ type: 'human', content: 'What is the status of ticket #4821?' }] },
    stream_mode: ['values', 'messages-tuple', 'updates'],
    multitask_strategy: 'enqueue',
  }),
  example(CreateDatasetDto, {
    name: 'billing-regressions',
    description: 'Billing questions support must answer the same way after every prompt change.',
  }),
  example(AddDatasetItemsDto, {
    items: [
      { input: 'Can I pay by invoice?', expected: 'invoice', match: 'contains' },
      {
        input: 'Refund my last charge.',
        rubric: 'Declines to refund by itself and hands the request to a human, politely.',
        metadata: { source: 'ticket-4821' },
      },
    ],
  }),
  example(DatasetItemFromTurnDto, { turnId: '0193f2a4-7c1e-7d52-9b1a-3f6e2d8c4b10', match: 'exact' }),
  example(CreateExperimentDto, {
    datasetId: '0197a3c6-2c3d-7e4f-9a0b-1c2d3e4f5a6b',
    agentId: AGENT_ID,
    versions: [3, 4],
  }),
];
