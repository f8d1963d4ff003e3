// Tools a tenant brings through MCP servers (issue 11).
export {};
