import { sealImportedRow, type ImportSealer } from './tenant-data';

/** A sealer that marks what it sealed, so each column's treatment is visible. */
const sealer = (strict = false): ImportSealer => ({
  strict,
  sealText: (text) => `sbe1.t.1.x.${text}`,
  sealJson: (value) => `sbe1.j.1.x.${JSON.stringify(value)}`,
});

describe('sealImportedRow (docs/adr/0068: an import seals as the live writers do)', () => {
  it('seals text and JSON content columns, leaving ids, nulls and other columns plain', () => {
    expect(
      sealImportedRow(
        'messages',
        { id: 'm1', body: { type: 'text', text: 'hi' }, tool_calls: null, metadata: {}, role: 'user' },
        sealer(),
      ),
    ).toEqual({
      id: 'm1',
      body: 'sbe1.j.1.x.{"type":"text","text":"hi"}',
      tool_calls: null,
      metadata: {},
      role: 'user',
    });
    expect(sealImportedRow('turns', { id: 't', final_text: 'done', status: 'completed' }, sealer())).toEqual({
      id: 't',
      final_text: 'sbe1.t.1.x.done',
      status: 'completed',
    });
    expect(
      sealImportedRow('tool_calls', { arguments: {}, result: { text: 'r' }, error: null }, sealer()),
    ).toEqual({ arguments: 'sbe1.j.1.x.{}', result: 'sbe1.j.1.x.{"text":"r"}', error: null });
    expect(sealImportedRow('memory_block_versions', { version: 2, content: 'Name: Ada' }, sealer())).toEqual({
      version: 2,
      content: 'sbe1.t.1.x.Name: Ada',
    });
  });

  it('seals only the content fields of a journal event, and the bodies inside deliveries and wake hints', () => {
    expect(
      sealImportedRow('events', { data: { text: 'hello', costUsd: '0.1', callId: 'c1' } }, sealer()),
    ).toEqual({ data: { text: 'sbe1.j.1.x."hello"', costUsd: '0.1', callId: 'c1' } });
    expect(
      sealImportedRow(
        'trigger_deliveries',
        { payload: { source: 'github', eventType: 'push', body: { a: 1 } } },
        sealer(),
      ),
    ).toEqual({ payload: { source: 'github', eventType: 'push', body: 'sbe1.j.1.x.{"a":1}' } });
    const hints = [
      { deliveryId: 'd1', body: { b: 2 } },
      { deliveryId: 'd2', body: null },
    ];
    expect(sealImportedRow('wake_hints', { hints }, sealer())).toEqual({
      hints: [
        { deliveryId: 'd1', body: 'sbe1.j.1.x.{"b":2}' },
        { deliveryId: 'd2', body: null },
      ],
    });
    expect(
      sealImportedRow('messages', { metadata: { wakeHints: { count: 1, hints } } }, sealer()).metadata,
    ).toEqual({
      wakeHints: {
        count: 1,
        hints: [
          { deliveryId: 'd1', body: 'sbe1.j.1.x.{"b":2}' },
          { deliveryId: 'd2', body: null },
        ],
      },
    });
  });

  it('leaves a sealed value and tables without content alone; strict empties the memory tsvector', () => {
    expect(sealImportedRow('turns', { final_text: 'sbe1.t.1.y.abc' }, sealer())).toEqual({
      final_text: 'sbe1.t.1.y.abc',
    });
    const agent = { id: 'a', name: 'echo' };
    expect(sealImportedRow('agents', agent, sealer())).toBe(agent);
    const record = { title: 'T', content: 'C', search: "'c':2 't':1" };
    expect(sealImportedRow('memory_records', record, sealer()).search).toBe("'c':2 't':1");
    expect(sealImportedRow('memory_records', record, sealer(true))).toEqual({
      title: 'sbe1.t.1.x.T',
      content: 'sbe1.t.1.x.C',
      search: '',
    });
  });
});
