import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentCard } from '@a2a-js/sdk';
import Ajv from 'ajv';
import { parse, type Enum, type Type } from 'protobufjs';
import { agentCardJson, agentCardOf } from './a2a';

/**
 * The served agent card against both published A2A specifications (docs/adr/0037): the v0.3 JSON
 * schema (`specification/json/a2a.json`, tag v0.3.0) and the v1.0 proto's REQUIRED fields
 * (`specification/a2a.proto`, tag v1.0.0), both vendored unmodified in test/fixtures/a2a (Apache-2.0).
 */
const FIXTURES = join(__dirname, '../../../../test/fixtures/a2a');

const agent = {
  name: 'travel-agent',
  instructions: 'Plan trips.',
  updatedAt: new Date('2026-01-01T00:00:00Z'),
};
const URL = 'https://switchboard.example/a2a/0b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3';
const served = agentCardJson(agentCardOf(agent, URL));

const v03 = (() => {
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addSchema(JSON.parse(readFileSync(join(FIXTURES, 'a2a-v0.3.0.schema.json'), 'utf8')), 'a2a-v0.3');
  return ajv.getSchema('a2a-v0.3#/definitions/AgentCard')!;
})();

const proto = parse(readFileSync(join(FIXTURES, 'a2a-v1.0.0.proto'), 'utf8')).root;

/**
 * Where `value` (proto JSON of `type`) misses a field the v1.0 proto marks REQUIRED, recursively
 * through the messages it holds (repeated, map values and oneof members included). proto3 JSON
 * omits a default, so REQUIRED means present and not empty.
 */
function missingRequired(type: Type, value: Record<string, unknown>, at: string): string[] {
  const missing: string[] = [];
  for (const field of type.fieldsArray) {
    field.resolve();
    const v = value[field.name];
    const required = field.options?.['(google.api.field_behavior)'] === 'REQUIRED';
    const empty = v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0);
    if (required && empty) missing.push(`${at}.${field.name}`);
    if (empty || !field.resolvedType || (field.resolvedType as Enum).values) continue;
    const child = field.resolvedType as Type;
    const items = field.map
      ? Object.entries(v as Record<string, unknown>).map(
          ([k, x]) => [`${at}.${field.name}[${k}]`, x] as const,
        )
      : field.repeated
        ? (v as unknown[]).map((x, i) => [`${at}.${field.name}[${i}]`, x] as const)
        : [[`${at}.${field.name}`, v] as const];
    for (const [path, x] of items) {
      if (x && typeof x === 'object')
        missing.push(...missingRequired(child, x as Record<string, unknown>, path));
    }
  }
  return missing;
}

describe('the served agent card', () => {
  it('is valid under the v0.3 JSON schema (AgentCard), with the url and protocolVersion v0.3 clients read', () => {
    const ok = v03(served);
    expect(v03.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
    expect(served).toMatchObject({ url: URL, protocolVersion: '0.3.0', preferredTransport: 'JSONRPC' });
    expect(served.securitySchemes).toMatchObject({ bearer: { type: 'http', scheme: 'bearer' } });
    expect(served.capabilities).toMatchObject({ streaming: true, pushNotifications: true });
  });

  it('the v1.0 card alone (before issue 32) fails the v0.3 schema: the check can fail', () => {
    expect(v03(AgentCard.toJSON(agentCardOf(agent, URL)))).toBe(false);
    expect(v03.errors?.map((e) => e.params)).toEqual(
      expect.arrayContaining([{ missingProperty: 'url' }, { missingProperty: 'protocolVersion' }]),
    );
  });

  it('has every field the v1.0 proto marks REQUIRED, and reads back as the same v1.0 card', () => {
    const type = proto.lookupType('lf.a2a.v1.AgentCard');
    expect(missingRequired(type, served, 'AgentCard')).toEqual([]);
    // The check can fail: a card without interfaces and a skill without tags is reported.
    const broken = { ...served, supportedInterfaces: [], skills: [{ id: 'x', name: 'x', description: 'x' }] };
    expect(missingRequired(type, broken, 'AgentCard')).toEqual([
      'AgentCard.supportedInterfaces',
      'AgentCard.skills[0].tags',
    ]);
    // A v1.0 reader (the SDK's proto JSON) sees the v1.0 card: the v0.3 fields beside it change nothing.
    expect(AgentCard.toJSON(AgentCard.fromJSON(served))).toEqual(AgentCard.toJSON(agentCardOf(agent, URL)));
    expect(served.supportedInterfaces).toEqual([
      expect.objectContaining({ url: URL, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }),
      expect.objectContaining({ url: URL, protocolBinding: 'JSONRPC', protocolVersion: '0.3' }),
    ]);
  });
});
