// The mapping moved to @switchboard/protocols (openai-chat/). AgentTurns (apps/gateway/src/http,
// moving to libs/agent-turns on its own branch) still imports OPERATOR_PROMPT from here: delete this
// file once it imports it from its new home.
export { OPERATOR_PROMPT } from '@switchboard/protocols';
