/**
 * Provider tool schema emission (seed 002 "Provider Tool Schema Contract").
 * Source schemas come from zod and keep their honest shape (optional fields stay
 * optional). Emission has two modes:
 * - relaxed (default): `strict: false`; every object schema still gets
 *   `additionalProperties: false`.
 * - strict: additionally every object lists all its properties as required,
 *   and a source-optional property becomes nullable (enums gain `null`).
 * Nested objects, array items and unions recurse through the same rules.
 */
export type SchemaMode = 'relaxed' | 'strict';

type Schema = Record<string, unknown>;

export function emitSchema(source: Schema, mode: SchemaMode): Schema {
  return emit(source, mode);
}

function emit(node: Schema, mode: SchemaMode): Schema {
  const out: Schema = { ...node };
  if (isObjectSchema(node)) {
    const properties = (node.properties ?? {}) as Record<string, Schema>;
    const required = new Set((node.required as string[] | undefined) ?? []);
    out.type = 'object';
    out.additionalProperties = false;
    out.properties = Object.fromEntries(
      Object.entries(properties).map(([key, child]) => {
        const emitted = emit(child, mode);
        return [key, mode === 'strict' && !required.has(key) ? nullable(emitted) : emitted];
      }),
    );
    if (mode === 'strict') out.required = Object.keys(properties);
  }
  if (node.items && typeof node.items === 'object') out.items = emit(node.items as Schema, mode);
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    if (Array.isArray(node[key])) out[key] = (node[key] as Schema[]).map((s) => emit(s, mode));
  }
  return out;
}

function isObjectSchema(node: Schema): boolean {
  return node.type === 'object' || (node.type === undefined && typeof node.properties === 'object');
}

/** The same schema, also accepting null. */
export function nullable(node: Schema): Schema {
  if (acceptsNull(node)) return node;
  if (Array.isArray(node.anyOf)) return { ...node, anyOf: [...(node.anyOf as Schema[]), { type: 'null' }] };
  const out: Schema = { ...node };
  if (typeof node.type === 'string') out.type = [node.type, 'null'];
  else if (Array.isArray(node.type)) out.type = [...(node.type as string[]), 'null'];
  else return { anyOf: [node, { type: 'null' }] };
  if (Array.isArray(node.enum)) out.enum = [...(node.enum as unknown[]), null];
  return out;
}

function acceptsNull(node: Schema): boolean {
  if (node.type === 'null') return true;
  if (Array.isArray(node.type) && (node.type as string[]).includes('null')) {
    return !Array.isArray(node.enum) || (node.enum as unknown[]).includes(null);
  }
  if (Array.isArray(node.anyOf)) return (node.anyOf as Schema[]).some(acceptsNull);
  return false;
}

/** Checks an emitted schema against the strict rules; an empty list means valid. */
export function strictViolations(node: Record<string, unknown>, path = '$'): string[] {
  const out: string[] = [];
  if (node.type === 'object' || (Array.isArray(node.type) && node.type.includes('object'))) {
    const props = (node.properties ?? {}) as Record<string, Record<string, unknown>>;
    if (node.additionalProperties !== false) out.push(`${path}: additionalProperties is not false`);
    const required = new Set((node.required as string[] | undefined) ?? []);
    for (const key of Object.keys(props)) {
      if (!required.has(key)) out.push(`${path}.${key}: not required`);
      out.push(...strictViolations(props[key], `${path}.${key}`));
    }
  }
  if (node.items) out.push(...strictViolations(node.items as Record<string, unknown>, `${path}[]`));
  for (const k of ['anyOf', 'oneOf', 'allOf']) {
    if (Array.isArray(node[k]))
      (node[k] as Record<string, unknown>[]).forEach((s, i) =>
        out.push(...strictViolations(s, `${path}.${k}[${i}]`)),
      );
  }
  if (
    Array.isArray(node.enum) &&
    Array.isArray(node.type) &&
    node.type.includes('null') &&
    !node.enum.includes(null)
  ) {
    out.push(`${path}: nullable enum without null`);
  }
  return out;
}
