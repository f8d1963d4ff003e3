import { TriageRules } from '@switchboard/triage';
import { REQUEST_EXAMPLES } from './examples';
import * as dtos from './dto';

describe('REQUEST_EXAMPLES', () => {
  it.each(REQUEST_EXAMPLES.map((e) => [e.dto.name, e] as const))(
    '%s: its example passes the schema',
    (_, e) => {
      const parsed = e.dto.schema.safeParse(e.value);
      expect(parsed.error?.issues).toBeUndefined();
    },
  );

  it('has one example per request DTO, none twice', () => {
    const names = REQUEST_EXAMPLES.map((e) => e.dto.name);
    expect(new Set(names).size).toBe(names.length);
    // Query DTOs describe parameters, not bodies.
    const bodies = Object.keys(dtos).filter((name) => !name.endsWith('QueryDto'));
    expect([...names].sort()).toEqual(bodies.sort());
  });

  it("gives a trigger rules the gateway keeps (triage's schema, checked beyond the request's outer shape)", () => {
    const trigger = REQUEST_EXAMPLES.find((e) => e.dto.name === 'CreateTriggerDto')!.value as {
      rules: unknown;
    };
    expect(TriageRules.safeParse(trigger.rules).error?.issues).toBeUndefined();
  });
});
