// Tools a tenant brings through MCP servers (issue 11, docs/adr/0023).
export * from './clients';
export * from './errors';
export * from './naming';
export * from './source';
export * from './tools';
export * from './url';
export * from './servers-repository';
