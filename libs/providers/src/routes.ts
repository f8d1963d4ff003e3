import { MODEL_HINT_PREFIX, MODEL_ROUTES, type ModelRoute } from '@switchboard/contracts';

/** A model reference after route resolution; `route` is set when it came from `hint:<route>`. */
export interface ResolvedModelRef {
  /** Concrete `<provider>/<model>`. */
  ref: string;
  route?: ModelRoute;
}

const isRoute = (name: string): name is ModelRoute => (MODEL_ROUTES as readonly string[]).includes(name);

/**
 * Resolves one model reference for a tenant. A concrete `<provider>/<model>` is returned unchanged;
 * `hint:<route>` becomes the tenant's model for that route, or `defaultModel` (the deployment's
 * DEFAULT_MODEL) when the tenant has not set it. Pure: no I/O, never throws. A hint naming an unknown
 * route (the API rejects those; only stale data can hold one) or a route that points at another hint
 * resolves to `defaultModel` as well, so resolution never loops and always ends in a concrete model.
 */
export function resolveModelRef(
  ref: string,
  routes: Partial<Record<ModelRoute, string>>,
  defaultModel: string,
): ResolvedModelRef {
  if (!ref.startsWith(MODEL_HINT_PREFIX)) return { ref };
  const name = ref.slice(MODEL_HINT_PREFIX.length);
  if (!isRoute(name)) return { ref: defaultModel };
  const target = routes[name];
  const usable = typeof target === 'string' && target.length > 0 && !target.startsWith(MODEL_HINT_PREFIX);
  return { ref: usable ? target : defaultModel, route: name };
}

/**
 * Resolves a primary model and its fallbacks, in order, dropping any that resolve to a model already
 * in the list (two hints routed to one model, or a hint routed to the primary, are tried once).
 */
export function resolveModelList(
  refs: readonly string[],
  routes: Partial<Record<ModelRoute, string>>,
  defaultModel: string,
): ResolvedModelRef[] {
  const out: ResolvedModelRef[] = [];
  const seen = new Set<string>();
  for (const ref of refs) {
    const resolved = resolveModelRef(ref, routes, defaultModel);
    if (seen.has(resolved.ref)) continue;
    seen.add(resolved.ref);
    out.push(resolved);
  }
  return out;
}

/** The models a turn runs on, in order: the primary, then its fallbacks (docs/adr/0059). */
export interface EffectiveModels {
  model: ResolvedModelRef;
  fallbackModels: ResolvedModelRef[];
}

/**
 * The agent's model and fallbacks as a turn runs them (docs/adr/0059): resolved through the tenant's
 * routes (`resolveModelList`); for a turn with image input, the tenant's `vision` route first when it
 * names a model that takes images, followed by those of the agent's models that take images too (a
 * text-only fallback would only fail on the image). Without a usable vision route, the agent's own.
 */
export function effectiveModels(
  refs: readonly string[],
  routes: Partial<Record<ModelRoute, string>>,
  defaultModel: string,
  opts: { images?: boolean; takesImages?: (ref: string) => boolean } = {},
): EffectiveModels {
  const resolved = resolveModelList(refs, routes, defaultModel);
  const vision = routes.vision;
  const sees = opts.takesImages ?? (() => true);
  if (opts.images && typeof vision === 'string' && !vision.startsWith(MODEL_HINT_PREFIX) && sees(vision)) {
    const rest = resolved.filter((r) => r.ref !== vision && sees(r.ref));
    return { model: { ref: vision, route: 'vision' }, fallbackModels: rest };
  }
  const [model, ...fallbackModels] = resolved;
  return { model, fallbackModels };
}
