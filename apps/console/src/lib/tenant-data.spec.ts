import { auditSummary, countLines, exportFileName, ExportReader, parseRetention } from './tenant-data';

describe('ExportReader', () => {
  const archive = [
    '{"kind":"manifest","format":"switchboard-tenant-export","version":1,"tenantId":"t1","after":null,"tables":[{"name":"tenants"}]}',
    '{"kind":"row","table":"tenants","row":{"id":"t1"}}',
    '{"kind":"checkpoint","cursor":"c1"}',
    '{"kind":"row","table":"agents","row":{"id":"a1"}}',
    '{"kind":"row","table":"agents","row":{"id":"a2"}}',
    '{"kind":"checkpoint","cursor":"c2"}',
    '{"kind":"end","counts":{"tenants":1,"agents":2}}',
    '',
  ].join('\n');

  it('tallies rows per table across chunks that split lines anywhere', () => {
    for (const size of [1, 7, 50, archive.length]) {
      const reader = new ExportReader();
      for (let i = 0; i < archive.length; i += size) reader.feed(archive.slice(i, i + size));
      const p = reader.finish();
      expect(p).toEqual({
        rows: 3,
        tables: { tenants: 1, agents: 2 },
        manifest: expect.objectContaining({ tenantId: 't1' }),
        end: { tenants: 1, agents: 2 },
        cursor: 'c2',
      });
    }
  });

  it('has no end until the end line arrives (a cut download), and reads a last line without newline', () => {
    const cut = new ExportReader();
    cut.feed(archive.split('\n').slice(0, 4).join('\n'));
    expect(cut.finish()).toMatchObject({ rows: 2, end: null, cursor: 'c1' });
    const unterminated = new ExportReader();
    unterminated.feed(archive.trimEnd());
    expect(unterminated.finish().end).toEqual({ tenants: 1, agents: 2 });
  });

  it('refuses what is not the archive', () => {
    expect(() => new ExportReader().feed('<html>\n')).toThrow(/not JSON/);
    expect(() => new ExportReader().feed('{"kind":"other"}\n')).toThrow(/no known kind/);
    expect(() => new ExportReader().feed('[1]\n')).toThrow(/no known kind/);
  });
});

describe('exportFileName', () => {
  it('makes the tenant name safe for a file and dates it', () => {
    expect(exportFileName('acme corp/üs', new Date('2026-12-06T21:00:00Z'))).toBe(
      'acme-corp-s-export-2026-12-06.jsonl',
    );
    expect(exportFileName('///', new Date('2026-12-06T00:00:00Z'))).toBe('tenant-export-2026-12-06.jsonl');
  });
});

describe('parseRetention', () => {
  it('empty is for ever; numbers go to the API as typed; text is refused here', () => {
    expect(parseRetention('  ')).toEqual({ ok: true, value: null });
    expect(parseRetention('30')).toEqual({ ok: true, value: 30 });
    expect(parseRetention('0')).toEqual({ ok: true, value: 0 });
    expect(parseRetention('2.5')).toEqual({ ok: true, value: 2.5 });
    expect(parseRetention('a week')).toEqual({ ok: false, error: expect.stringMatching(/number of days/) });
  });
});

describe('countLines', () => {
  it('keeps the tables with rows, most first, and totals them', () => {
    expect(countLines({ events: 40, tenants: 1, agents: 0, sessions: 40 })).toEqual({
      total: 81,
      tables: [
        ['events', 40],
        ['sessions', 40],
        ['tenants', 1],
      ],
    });
    expect(countLines(null)).toEqual({ total: 0, tables: [] });
  });
});

describe('auditSummary', () => {
  it('reads a deletion receipt', () => {
    expect(
      auditSummary('tenant.deleted', {
        tenantName: 'acme',
        counts: { tenants: 1, sessions: 2, agents: 0 },
        redisKeys: 4,
        jobs: 1,
        originals: 0,
        keyDestroyed: true,
      }),
    ).toBe(
      'acme: 3 rows deleted from 2 tables, 4 Redis keys, 1 queued job, 0 stored originals; data key destroyed first.',
    );
    expect(auditSummary('tenant.deleted', { counts: {}, keyDestroyed: false })).toBe(
      '0 rows deleted from 0 tables, 0 Redis keys, 0 queued jobs, 0 stored originals; no data key to destroy.',
    );
  });

  it('reads an export, a retention purge and both kinds of rotation', () => {
    expect(auditSummary('tenant.exported', { tables: { tenants: 1, agents: 2 }, resumed: false })).toBe(
      '3 rows from 2 tables exported.',
    );
    expect(auditSummary('tenant.exported', { tables: { tenants: 1 }, resumed: true })).toBe(
      '1 row from 1 table exported (a resumed export).',
    );
    expect(
      auditSummary('tenant.retention_purged', {
        retentionDays: 30,
        sessions: 2,
        messages: 10,
        toolCalls: 1,
        originals: 0,
        events: 5,
      }),
    ).toBe(
      'Content of 2 sessions older than 30 days purged: 10 messages, 1 tool call, 0 originals, 5 events.',
    );
    expect(auditSummary('tenant.data_key_rotated', { kind: 'data_key', version: 2, previous: 1 })).toBe(
      'Data key rotated: version 2 active, version 1 retired.',
    );
    expect(auditSummary('tenant.data_key_rotated', { kind: 'data_key', version: 1, previous: null })).toBe(
      'Data key version 1 created.',
    );
    expect(auditSummary('tenant.data_key_rotated', { kind: 'kek', versions: [1, 2], kekId: 'k2' })).toBe(
      '2 data-key versions re-wrapped under key-encryption key k2.',
    );
    expect(auditSummary('tenant.paused', { reason: 'x' })).toBeNull();
  });
});
