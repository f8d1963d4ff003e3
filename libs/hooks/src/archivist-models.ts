import { type ModelRoute } from '@switchboard/contracts';
import { resolveModelList, resolveModelRef } from '@switchboard/providers';

/**
 * The models the archivist asks, in order (docs/adr/0022, "The archivist's model"): the tenant's
 * `summarization` route alone when it has one (the tenant chose it); otherwise the deployment's
 * DEFAULT_MODEL (what `hint:summarization` resolves to without a route), then the agent's own model
 * (resolved through the tenant's routes as the runner resolves it), each once. The agent's model is
 * the fallback for a DEFAULT_MODEL that cannot do the job: a default deployment's `scripted/demo`
 * beside agents on real providers.
 */
export function archivistModels(
  routes: Partial<Record<ModelRoute, string>>,
  defaultModel: string,
  agentModel: string | null,
): string[] {
  // '' for the default: only a usable route resolves to a model.
  const routed = resolveModelRef('hint:summarization', routes, '').ref;
  if (routed) return [routed];
  return resolveModelList([defaultModel, ...(agentModel ? [agentModel] : [])], routes, defaultModel).map(
    (r) => r.ref,
  );
}

/**
 * What one hooks process has learnt about the archivist's models: those that answered it with a tool
 * call (they cannot do its job and would answer so every time: not asked again for `unfitForMs`, so
 * a real model that did so once is tried again later), and the models and tenants already warned
 * about — so a default deployment logs one warning per model and one per tenant, not a failure per
 * session. Bounded: past `MAX_TENANTS` warned tenants the list starts again.
 */
export class ArchivistModelNotes {
  static readonly MAX_TENANTS = 10_000;
  private readonly unfit = new Map<string, number>();
  private readonly warnedModels = new Set<string>();
  private readonly warnedTenants = new Set<string>();

  constructor(
    private readonly unfitForMs = 15 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  isUnfit(ref: string): boolean {
    return (this.unfit.get(ref) ?? 0) > this.now();
  }

  /** Notes `ref` as unfit; true the first time (the time to warn). */
  markUnfit(ref: string): boolean {
    this.unfit.set(ref, this.now() + this.unfitForMs);
    if (this.warnedModels.has(ref)) return false;
    this.warnedModels.add(ref);
    return true;
  }

  /** True the first time this tenant is told that none of its models can distil. */
  firstNoModelWarning(tenantId: string): boolean {
    if (this.warnedTenants.has(tenantId)) return false;
    if (this.warnedTenants.size >= ArchivistModelNotes.MAX_TENANTS) this.warnedTenants.clear();
    this.warnedTenants.add(tenantId);
    return true;
  }
}
