-- The hourly side-effect budget (docs/adr/0058): an agent's cap on side-effecting tool calls per
-- rolling hour; null is unlimited. The tenant's cap is an operator setting in tenants.settings.
ALTER TABLE "agents" ADD COLUMN "max_actions_per_hour" INTEGER;
