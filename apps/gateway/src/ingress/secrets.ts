// Moved to libs/platform (the harness worker opens MCP servers' secrets too).
export { SecretBox } from '@switchboard/platform';
