/**
 * The wire protocols' mappings (no I/O): one folder per protocol holding only the mapping between
 * its wire and a turn, its events and its error shape. The gateway's controllers (apps/gateway/src/
 * protocols/) do the I/O and register each error shape with the error filter.
 */
export * from './openai-chat/chat-completions';
export * from './responses/responses';
export * from './langgraph/mapping';
export * from './mcp/mcp';
export * from './a2a/a2a';
export * from './jsonrpc/errors';
export * from './langgraph/checkpoints';
