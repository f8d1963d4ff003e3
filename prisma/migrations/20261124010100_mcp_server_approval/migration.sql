-- Per-server approval opt-out for MCP tools (docs/adr/0023): side_effects (default, every tool that is
-- not read-only needs approval), destructive_only, none.
ALTER TABLE "mcp_servers" ADD COLUMN "approval" TEXT NOT NULL DEFAULT 'side_effects';
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_approval_check"
  CHECK ("approval" IN ('side_effects', 'destructive_only', 'none'));
