import { auditDetails, auditInsert, apiKeyActor, OPERATOR_ACTOR } from './audit-log';

/** What an audit entry may keep (docs/adr/0030): never a secret, never a hash. */
describe('auditDetails', () => {
  it('keeps plain fields and redacts secrets and hashes at any depth', () => {
    expect(
      auditDetails({
        name: 'ci',
        prefix: 'sb_ab12',
        keyId: 'k1',
        hash: 'abc',
        tokenHash: 'def',
        notifySecret: 'whsec_x',
        nested: { authorization: 'Bearer x', list: [{ apiKey: 'sb_x', ok: 1 }], signingSecret: 's' },
        fields: ['notifySecret', 'modelRoutes'],
      }),
    ).toEqual({
      name: 'ci',
      prefix: 'sb_ab12',
      keyId: 'k1',
      hash: '[redacted]',
      tokenHash: '[redacted]',
      notifySecret: '[redacted]',
      nested: {
        authorization: '[redacted]',
        list: [{ apiKey: '[redacted]', ok: 1 }],
        signingSecret: '[redacted]',
      },
      // Field names are values: naming a changed secret is not the secret.
      fields: ['notifySecret', 'modelRoutes'],
    });
    expect(auditDetails()).toEqual({});
    expect(auditDetails({ at: new Date('2026-01-01T00:00:00Z') })).toEqual({
      at: '2026-01-01T00:00:00.000Z',
    });
  });

  it('inserts with parameters only, the details redacted', () => {
    const { text, values } = auditInsert({
      tenantId: null,
      actor: OPERATOR_ACTOR,
      action: 'tenant.created',
      targetType: 'tenant',
      targetId: 't1',
      details: { secret: 'x', name: "o'brien" },
    }).toQuery();
    expect(text).not.toContain("o'brien");
    expect(values).toContain(JSON.stringify({ secret: '[redacted]', name: "o'brien" }));
    expect(apiKeyActor('k1')).toBe('api_key:k1');
  });
});
