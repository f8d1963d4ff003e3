import { ClientToolRefused } from '@switchboard/contracts';
import { checkClientTools } from './client-tools';

const param = (i: number, field: string) => `tools[${i}].${field}`;
const refusal = (f: () => unknown): ClientToolRefused => {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ClientToolRefused);
    return err as ClientToolRefused;
  }
  throw new Error('not refused');
};

describe('checkClientTools (docs/adr/0047)', () => {
  const city = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

  it('takes a schema that names its dialect (zod 4 / LangChain say draft 2020-12)', () => {
    const parameters = { $schema: 'https://json-schema.org/draft/2020-12/schema', ...city };
    expect(
      checkClientTools([{ name: 'get_weather', description: '', parameters }], new Set(), param),
    ).toEqual([{ name: 'get_weather', description: '', parameters }]);
  });

  it('still refuses a schema that is not one, a bad name, a duplicate and a clash', () => {
    const bad = { ...city, required: 'city' };
    expect(
      refusal(() => checkClientTools([{ name: 'x', description: '', parameters: bad }], new Set(), param))
        .reason,
    ).toBe('invalid_schema');
    expect(
      refusal(() => checkClientTools([{ name: 'a b', description: '', parameters: city }], new Set(), param))
        .reason,
    ).toBe('invalid_tool');
    const twice = [0, 1].map(() => ({ name: 'x', description: '', parameters: city }));
    expect(refusal(() => checkClientTools(twice, new Set(), param)).reason).toBe('duplicate_tool');
    expect(
      refusal(() =>
        checkClientTools([{ name: 'mine', description: '', parameters: city }], new Set(['mine']), param),
      ).reason,
    ).toBe('tool_name_clash');
  });
});
