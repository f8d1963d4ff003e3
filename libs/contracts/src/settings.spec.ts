import {
  applySettingsUpdate,
  ARCHIVIST_DEFAULTS,
  parseStoredSetting,
  parseTenantSettings,
  resolveArchivistSettings,
  TenantSettings,
  UpdateSettingsRequest,
} from './api';
import { z } from 'zod';

describe('TenantSettings', () => {
  it('accepts routes to concrete models and a block list', () => {
    const settings = {
      modelRoutes: { chat: 'openai/gpt-4o-mini', coding: 'anthropic/claude-sonnet-5-5' },
      blockedTools: ['http_get'],
    };
    expect(TenantSettings.parse(settings)).toEqual(settings);
    expect(TenantSettings.parse({})).toEqual({});
  });

  it.each([
    ['an unknown route', { modelRoutes: { poetry: 'openai/gpt-4o' } }],
    ['a route to a hint', { modelRoutes: { chat: 'hint:coding' } }],
    ['a route to a non-reference', { modelRoutes: { chat: 'gpt-4o' } }],
    ['a null route', { modelRoutes: { chat: null } }],
    ['an unknown field', { budgets: {} }],
    ['blockedTools not an array', { blockedTools: 'http_get' }],
    ['an empty tool name', { blockedTools: [''] }],
    ['a tool name over 120 characters', { blockedTools: ['x'.repeat(121)] }],
    ['more than 100 blocked tools', { blockedTools: Array.from({ length: 101 }, (_, i) => `t${i}`) }],
    ['duplicate blocked tools', { blockedTools: ['a', 'b', 'a'] }],
  ])('rejects %s', (_name, value) => {
    expect(TenantSettings.safeParse(value).success).toBe(false);
  });

  it('names the duplicates', () => {
    const result = TenantSettings.safeParse({ blockedTools: ['a', 'b', 'a', 'b', 'a'] });
    expect(result.error?.issues[0].message).toBe('duplicate tools: a, b');
  });
});

describe('parseTenantSettings', () => {
  it('returns both fields for valid settings', () => {
    expect(
      parseTenantSettings({ modelRoutes: { burst: 'openai/gpt-4o-mini' }, blockedTools: ['a'] }),
    ).toEqual({
      modelRoutes: { burst: 'openai/gpt-4o-mini' },
      blockedTools: ['a'],
      toolSchemaMode: 'relaxed',
      modelPrices: {},
      approvalRequired: [],
      archivist: {},
      evaluation: {},
    });
    expect(parseTenantSettings({ toolSchemaMode: 'strict' }).toolSchemaMode).toBe('strict');
  });

  it.each([
    null,
    undefined,
    'x',
    42,
    [],
    true,
    {},
    { modelRoutes: 'x', blockedTools: {} },
    { modelRoutes: [] },
  ])('never throws, and gives empty settings for %p', (json) => {
    expect(parseTenantSettings(json)).toEqual({
      modelRoutes: {},
      blockedTools: [],
      toolSchemaMode: 'relaxed',
      modelPrices: {},
      approvalRequired: [],
      archivist: {},
      evaluation: {},
    });
  });

  it('keeps the valid entries and drops the invalid ones', () => {
    expect(
      parseTenantSettings({
        modelRoutes: {
          chat: 'openai/gpt-4o',
          coding: 'hint:chat',
          reasoning: 7,
          poetry: 'openai/gpt-4o',
          burst: null,
        },
        blockedTools: ['a', '', 3, 'a', 'b', null],
        budgets: { maxUsd: 1 },
        toolSchemaMode: 'STRICT',
      }),
    ).toEqual({
      modelRoutes: { chat: 'openai/gpt-4o' },
      blockedTools: ['a', 'b'],
      toolSchemaMode: 'relaxed',
      modelPrices: {},
      approvalRequired: [],
      archivist: {},
      evaluation: {},
    });
  });

  it('keeps the valid prices and drops the invalid ones', () => {
    expect(
      parseTenantSettings({
        modelPrices: {
          'openai-chat/llama3.1:8b': { input: 0, output: 0 },
          'openai/*': { input: 1, output: 2, cachedInput: 0.5 },
          'gpt-5': { input: 1, output: 1 },
          'openai/gpt-5': { input: -1, output: 1 },
          'anthropic/claude-opus-4-6': { input: 1 },
        },
      }).modelPrices,
    ).toEqual({
      'openai-chat/llama3.1:8b': { input: 0, output: 0 },
      'openai/*': { input: 1, output: 2, cachedInput: 0.5 },
    });
  });

  it('reads the approval list and TTL, dropping what is invalid (docs/adr/0013)', () => {
    const s = parseTenantSettings({ approvalRequired: ['pay', 'pay', '', 7, 'send'], approvalTtlMs: 60_000 });
    expect(s.approvalRequired).toEqual(['pay', 'send']);
    expect(s.approvalTtlMs).toBe(60_000);
    expect(parseTenantSettings({ approvalTtlMs: 5 }).approvalTtlMs).toBeUndefined();
    expect(parseTenantSettings({ approvalTtlMs: 'soon' }).approvalTtlMs).toBeUndefined();
  });

  it('caps the block list at 100 tools', () => {
    const tools = Array.from({ length: 150 }, (_, i) => `t${i}`);
    expect(parseTenantSettings({ blockedTools: tools }).blockedTools).toEqual(tools.slice(0, 100));
  });

  it('ignores inherited properties', () => {
    const routes = Object.create({ chat: 'openai/gpt-4o' }) as object;
    expect(parseTenantSettings({ modelRoutes: routes }).modelRoutes).toEqual({});
  });
});

describe('UpdateSettingsRequest', () => {
  it.each([
    ['a route', { modelRoutes: { chat: 'openai/gpt-4o' } }],
    ['a route removal', { modelRoutes: { chat: null } }],
    ['a block list', { blockedTools: ['http_get'] }],
    ['an empty block list', { blockedTools: [] }],
    ['both', { modelRoutes: { coding: 'anthropic/claude-sonnet-5-5', burst: null }, blockedTools: [] }],
    [
      'a price and a price removal',
      { modelPrices: { 'openai/gpt-5': { input: 1, output: 8 }, 'openai-chat/*': null } },
    ],
  ])('accepts %s', (_name, body) => {
    expect(UpdateSettingsRequest.parse(body)).toEqual(body);
  });

  it.each([
    ['an empty body', {}],
    ['an unknown field', { blockedTools: [], colour: 'red' }],
    ['an unknown route', { modelRoutes: { poetry: 'openai/gpt-4o' } }],
    ['a route to a hint', { modelRoutes: { chat: 'hint:coding' } }],
    ['a route to a non-reference', { modelRoutes: { chat: 'gpt-4o' } }],
    ['modelRoutes null', { modelRoutes: null }],
    ['blockedTools null', { blockedTools: null }],
    ['blockedTools not an array', { blockedTools: 'http_get' }],
    ['duplicate blocked tools', { blockedTools: ['a', 'a'] }],
    ['a price for a bare model name', { modelPrices: { 'gpt-5': { input: 1, output: 1 } } }],
    ['a price for an unknown provider', { modelPrices: { 'fake/m1': { input: 1, output: 1 } } }],
    ['a negative price', { modelPrices: { 'openai/gpt-5': { input: -1, output: 1 } } }],
    ['a price without output', { modelPrices: { 'openai/gpt-5': { input: 1 } } }],
    [
      'a price with an unknown field',
      { modelPrices: { 'openai/gpt-5': { input: 1, output: 1, per: 'token' } } },
    ],
  ])('rejects %s', (_name, body) => {
    expect(UpdateSettingsRequest.safeParse(body).success).toBe(false);
  });
});

describe('applySettingsUpdate', () => {
  const stored = {
    modelRoutes: { chat: 'openai/gpt-4o', coding: 'anthropic/claude-sonnet-5-5' },
    blockedTools: ['a'],
    budgets: { maxUsd: 1 },
  };

  it('merges routes per route, null removing one, and keeps the other keys', () => {
    expect(
      applySettingsUpdate(stored, { modelRoutes: { chat: null, burst: 'openai/gpt-4.1-mini' } }),
    ).toEqual({
      modelRoutes: { coding: 'anthropic/claude-sonnet-5-5', burst: 'openai/gpt-4.1-mini' },
      blockedTools: ['a'],
      toolSchemaMode: 'relaxed',
      modelPrices: {},
      approvalRequired: [],
      archivist: {},
      evaluation: {},
      budgets: { maxUsd: 1 },
    });
  });

  it('merges prices per key, null removing one', () => {
    const priced = { ...stored, modelPrices: { 'openai/gpt-5': { input: 1, output: 8 } } };
    expect(
      applySettingsUpdate(priced, {
        modelPrices: { 'openai/gpt-5': null, 'openai-chat/llama3.1:8b': { input: 0, output: 0 } },
      }).modelPrices,
    ).toEqual({ 'openai-chat/llama3.1:8b': { input: 0, output: 0 } });
  });

  it('refuses more than 100 prices in all', () => {
    const many = Object.fromEntries(
      Array.from({ length: 100 }, (_, i) => [`openai/m${i}`, { input: 1, output: 1 }]),
    );
    expect(() =>
      applySettingsUpdate(
        { modelPrices: many },
        { modelPrices: { 'openai/one-more': { input: 1, output: 1 } } },
      ),
    ).toThrow('at most 100 prices');
  });

  it('replaces the block list and the schema mode when given', () => {
    expect(applySettingsUpdate(stored, { blockedTools: [], toolSchemaMode: 'strict' })).toMatchObject({
      modelRoutes: stored.modelRoutes,
      blockedTools: [],
      toolSchemaMode: 'strict',
    });
  });

  it('replaces the approval list, sets the TTL, and null goes back to the deployment TTL', () => {
    const set = applySettingsUpdate(stored, { approvalRequired: ['pay'], approvalTtlMs: 60_000 });
    expect(set).toMatchObject({ approvalRequired: ['pay'], approvalTtlMs: 60_000, blockedTools: ['a'] });
    const cleared = applySettingsUpdate(set, { approvalTtlMs: null });
    expect(cleared.approvalTtlMs).toBeUndefined();
    expect(cleared.approvalRequired).toEqual(['pay']);
    expect(UpdateSettingsRequest.safeParse({ approvalTtlMs: 10 }).success).toBe(false);
    expect(UpdateSettingsRequest.safeParse({ approvalRequired: ['a', 'a'] }).success).toBe(false);
  });

  it('starts from empty settings when what is stored is not an object', () => {
    expect(applySettingsUpdate('garbage', { blockedTools: ['b'] })).toEqual({
      modelRoutes: {},
      blockedTools: ['b'],
      toolSchemaMode: 'relaxed',
      modelPrices: {},
      approvalRequired: [],
      archivist: {},
      evaluation: {},
    });
  });
});

describe('notify endpoint settings (docs/adr/0018)', () => {
  const secret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;

  it('reads the URL and secret only as a valid pair', () => {
    expect(parseTenantSettings({ notifyUrl: 'https://h.example/x', notifySecret: secret })).toMatchObject({
      notifyUrl: 'https://h.example/x',
      notifySecret: secret,
    });
    expect(parseTenantSettings({ notifyUrl: 'https://h.example/x' }).notifyUrl).toBeUndefined();
    expect(
      parseTenantSettings({ notifyUrl: 'file:///etc/passwd', notifySecret: secret }).notifyUrl,
    ).toBeUndefined();
    expect(
      parseTenantSettings({ notifyUrl: 'https://h.example/x', notifySecret: 'whsec_c2hvcnQ=' }).notifySecret,
    ).toBe(undefined);
  });

  it('needs a secret with a URL, keeps the secret when the URL moves, and null removes both', () => {
    expect(() => applySettingsUpdate({}, { notifyUrl: 'https://h.example/x' })).toThrow(
      'notifyUrl needs a notifySecret',
    );
    const set = applySettingsUpdate({}, { notifyUrl: 'https://h.example/x', notifySecret: secret });
    const moved = applySettingsUpdate(set, { notifyUrl: 'https://h.example/y' });
    expect(moved).toMatchObject({ notifyUrl: 'https://h.example/y', notifySecret: secret });
    const removed = applySettingsUpdate(moved, { notifyUrl: null });
    expect(parseTenantSettings(removed).notifyUrl).toBeUndefined();
    expect(parseTenantSettings(removed).notifySecret).toBeUndefined();
    expect(UpdateSettingsRequest.safeParse({ notifySecret: null }).success).toBe(false);
  });
});

describe('daily spend cap (docs/adr/0026)', () => {
  it('sets, keeps and removes the cap; reads only a positive number', () => {
    expect(UpdateSettingsRequest.safeParse({ dailySpendLimitUsd: 0 }).success).toBe(false);
    expect(UpdateSettingsRequest.safeParse({ dailySpendLimitUsd: -1 }).success).toBe(false);
    expect(UpdateSettingsRequest.safeParse({ dailySpendLimitUsd: '5' }).success).toBe(false);
    expect(UpdateSettingsRequest.safeParse({ dailySpendLimitUsd: 2_000_000 }).success).toBe(false);
    const set = applySettingsUpdate({}, UpdateSettingsRequest.parse({ dailySpendLimitUsd: 12.5 }));
    expect(parseTenantSettings(set).dailySpendLimitUsd).toBe(12.5);
    const kept = applySettingsUpdate(set, UpdateSettingsRequest.parse({ toolSchemaMode: 'strict' }));
    expect(parseTenantSettings(kept).dailySpendLimitUsd).toBe(12.5);
    const removed = applySettingsUpdate(kept, UpdateSettingsRequest.parse({ dailySpendLimitUsd: null }));
    expect(parseTenantSettings(removed).dailySpendLimitUsd).toBeUndefined();
    expect(parseTenantSettings({ dailySpendLimitUsd: 'lots' }).dailySpendLimitUsd).toBeUndefined();
  });
});

describe('archivist settings (docs/adr/0032)', () => {
  it('resolves the agent’s over the tenant’s over the defaults, field by field, ignoring invalid ones', () => {
    expect(resolveArchivistSettings(undefined, undefined)).toEqual(ARCHIVIST_DEFAULTS);
    expect(resolveArchivistSettings({ mode: 'every_turn', idleMs: 5000 }, { idleMs: 2000 })).toEqual({
      mode: 'every_turn',
      afterTurns: ARCHIVIST_DEFAULTS.afterTurns,
      idleMs: 2000,
    });
    expect(resolveArchivistSettings({ mode: 'sometimes' }, { afterTurns: 0 })).toEqual(ARCHIVIST_DEFAULTS);
  });

  it('is replaced by a PATCH, and null goes back to the defaults; out-of-range values are refused', () => {
    const stored = applySettingsUpdate({}, { archivist: { mode: 'off' } });
    expect(parseTenantSettings(stored).archivist).toEqual({ mode: 'off' });
    expect(parseTenantSettings(applySettingsUpdate(stored, { archivist: null })).archivist).toEqual({});
    expect(parseTenantSettings(applySettingsUpdate(stored, { blockedTools: [] })).archivist).toEqual({
      mode: 'off',
    });
    expect(UpdateSettingsRequest.safeParse({ archivist: { afterTurns: 0 } }).success).toBe(false);
    expect(UpdateSettingsRequest.safeParse({ archivist: { idleMs: 10 } }).success).toBe(false);
    expect(UpdateSettingsRequest.safeParse({ archivist: { mode: 'always' } }).success).toBe(false);
    expect(UpdateSettingsRequest.safeParse({ archivist: { every: 1 } }).success).toBe(false);
    // A stored value that is no longer valid reads as none.
    expect(parseTenantSettings({ archivist: { mode: 'always' } }).archivist).toEqual({});
  });
});

describe('evaluation settings (docs/adr/0062)', () => {
  it('sets, replaces and removes the judges’ daily budget; refuses a negative one', () => {
    const set = applySettingsUpdate({}, UpdateSettingsRequest.parse({ evaluation: { dailyBudgetUsd: 2.5 } }));
    expect(parseTenantSettings(set).evaluation).toEqual({ dailyBudgetUsd: 2.5 });
    const kept = applySettingsUpdate(set, UpdateSettingsRequest.parse({ toolSchemaMode: 'strict' }));
    expect(parseTenantSettings(kept).evaluation).toEqual({ dailyBudgetUsd: 2.5 });
    const cleared = applySettingsUpdate(set, UpdateSettingsRequest.parse({ evaluation: null }));
    expect(parseTenantSettings(cleared).evaluation).toEqual({});
    expect(UpdateSettingsRequest.safeParse({ evaluation: { dailyBudgetUsd: -1 } }).success).toBe(false);
    expect(UpdateSettingsRequest.safeParse({ evaluation: { budget: 1 } }).success).toBe(false);
    expect(parseTenantSettings({ evaluation: { dailyBudgetUsd: 'lots' } }).evaluation).toEqual({});
  });
});

describe('parseStoredSetting (issue 37: absent fields parsed once per schema)', () => {
  it('answers as safeParse does, for present and absent values', () => {
    const schemas = [z.int().min(1), z.enum(['a', 'b']), z.int().optional(), z.string().default('x')];
    for (const schema of schemas)
      for (const value of [undefined, undefined, 3, 'a', null, 0]) {
        const got = parseStoredSetting(schema, value);
        const want = schema.safeParse(value);
        expect(got.success).toBe(want.success);
        expect(got.data).toEqual(want.data);
      }
  });

  it('reuses the answer for an absent value, never one holding an object', () => {
    const absent = z.int();
    expect(parseStoredSetting(absent, undefined)).toBe(parseStoredSetting(absent, undefined));
    const withObject = z.object({ a: z.int() }).default({ a: 1 });
    const first = parseStoredSetting(withObject, undefined);
    expect(first.data).toEqual({ a: 1 });
    expect(parseStoredSetting(withObject, undefined)).not.toBe(first);
  });

  it('leaves parseTenantSettings of empty settings as it was', () => {
    expect(parseTenantSettings({})).toEqual(parseTenantSettings(null));
    expect(parseTenantSettings({})).toMatchObject({
      toolSchemaMode: 'relaxed',
      blockedTools: [],
      modelRoutes: {},
    });
    expect(parseTenantSettings({})).not.toHaveProperty('approvalTtlMs');
    expect(parseTenantSettings({})).not.toHaveProperty('notifyUrl');
  });
});
