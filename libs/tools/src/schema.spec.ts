import { z } from 'zod';
import { BUILTIN_TOOLS } from './builtins';
import { emitSchema, nullable, strictViolations } from './schema';
import { defineTool, toolSpec } from './tool';

const sample = defineTool({
  name: 'sample',
  description: 'A schema with every shape',
  schema: z.strictObject({
    query: z.string(),
    limit: z.int().optional(),
    mode: z.enum(['fast', 'slow']).optional(),
    filter: z.object({ tag: z.string(), since: z.string().optional() }).optional(),
    items: z.array(z.object({ id: z.string(), note: z.string().optional() })),
    either: z.union([z.string(), z.number()]).optional(),
  }),
  sideEffect: 'read_only',
  timeoutMs: 100,
  needsApproval: false,
  execute: async () => null,
});

describe('tool schema emission', () => {
  it('relaxed keeps optional fields optional but closes every object', () => {
    const spec = toolSpec(sample, 'relaxed');
    expect(spec.strict).toBe(false);
    const p = spec.parameters as any;
    expect(p.additionalProperties).toBe(false);
    expect(p.required.sort()).toEqual(['items', 'query']);
    expect(p.properties.filter.additionalProperties).toBe(false);
    expect(p.properties.items.items.additionalProperties).toBe(false);
    expect(p.properties.limit.type).toBe('integer');
  });

  it('strict requires every property and makes optional ones nullable, recursively', () => {
    const spec = toolSpec(sample, 'strict');
    expect(spec.strict).toBe(true);
    expect(strictViolations(spec.parameters)).toEqual([]);
    const p = spec.parameters as any;
    expect(p.required).toEqual(['query', 'limit', 'mode', 'filter', 'items', 'either']);
    expect(p.properties.query.type).toBe('string');
    expect(p.properties.limit.type).toEqual(['integer', 'null']);
    expect(p.properties.mode).toMatchObject({ type: ['string', 'null'], enum: ['fast', 'slow', null] });
    expect(p.properties.filter.required).toEqual(['tag', 'since']);
    expect(p.properties.filter.properties.since.type).toEqual(['string', 'null']);
    expect(p.properties.items.items.properties.note.type).toEqual(['string', 'null']);
    expect(p.properties.either.type).toEqual(['string', 'number', 'null']);
  });

  it('the checker itself catches a non-strict schema', () => {
    expect(strictViolations(toolSpec(sample, 'relaxed').parameters)).not.toEqual([]);
  });

  it('nullable leaves a schema that already accepts null alone', () => {
    expect(nullable({ type: ['string', 'null'] })).toEqual({ type: ['string', 'null'] });
    expect(nullable({ anyOf: [{ type: 'string' }, { type: 'null' }] })).toEqual({
      anyOf: [{ type: 'string' }, { type: 'null' }],
    });
    expect(nullable({ $ref: '#/x' })).toEqual({ anyOf: [{ $ref: '#/x' }, { type: 'null' }] });
  });

  it('source schemas are not changed by emission', () => {
    const source = { type: 'object', properties: { a: { type: 'string' } } };
    emitSchema(source, 'strict');
    expect(source).toEqual({ type: 'object', properties: { a: { type: 'string' } } });
  });

  it.each(BUILTIN_TOOLS.map((t) => [t.name, t] as const))(
    'built-in %s emits a valid strict schema',
    (_n, tool) => {
      expect(strictViolations(toolSpec(tool, 'strict').parameters)).toEqual([]);
    },
  );
});
