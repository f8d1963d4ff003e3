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
  it('seals what the writers with their own SQL seal (approvals, cancels, tasks, evaluation), their plain fields left plain', () => {
    const T = (v: string) => `sbe1.t.1.x.${v}`;
    const J = (v: unknown) => `sbe1.j.1.x.${JSON.stringify(v)}`;
    expect(
      sealImportedRow(
        'approvals',
        { arguments: { url: 'u' }, reason: 'ok', output: 'answer', decided_by: 'key:1', status: 'approved' },
        sealer(),
      ),
    ).toEqual({
      arguments: J({ url: 'u' }),
      reason: T('ok'),
      output: T('answer'),
      decided_by: 'key:1',
      status: 'approved',
    });
    // The fixed reason a cancel writes on its pending approvals stays as written.
    const system = { arguments: 'sbe1.j.1.y.a', reason: 'the turn was cancelled', decided_by: 'system' };
    expect(sealImportedRow('approvals', system, sealer())).toEqual(system);
    expect(sealImportedRow('turns', { cancel_note: 'why', cancel_reason: 'user' }, sealer())).toEqual({
      cancel_note: T('why'),
      cancel_reason: 'user',
    });
    expect(
      sealImportedRow(
        'tasks',
        {
          input: { task: 'do', context: 'ctx', answers: { call_ask: 'yes', done: 'sbe1.t.1.y.z' } },
          handback: { status: 'awaiting_user', question: 'q?', options: ['a', 'b'], callId: 'call_ask' },
          output: 'out',
        },
        sealer(),
      ),
    ).toEqual({
      input: { task: T('do'), context: T('ctx'), answers: { call_ask: T('yes'), done: 'sbe1.t.1.y.z' } },
      handback: { status: 'awaiting_user', question: T('q?'), options: J(['a', 'b']), callId: 'call_ask' },
      output: T('out'),
    });
    // An empty text stays as is (TenantCipher.sealText), as the writers in SQL store it.
    const cancelled = { handback: { status: 'incomplete', reason: 'cancelled' }, output: '' };
    expect(sealImportedRow('tasks', cancelled, sealer())).toEqual(cancelled);
    expect(sealImportedRow('turns', { final_text: '' }, sealer())).toEqual({ final_text: '' });
    expect(
      sealImportedRow('dataset_items', { input: 'i', expected: null, rubric: 'r', match: 'exact' }, sealer()),
    ).toEqual({ input: T('i'), expected: null, rubric: T('r'), match: 'exact' });
    expect(
      sealImportedRow(
        'turn_scores',
        { reason: 'because', details: { comment: 'nice', rating: 'up' }, score: 1, passed: true },
        sealer(),
      ),
    ).toEqual({
      reason: T('because'),
      details: { comment: T('nice'), rating: 'up' },
      score: 1,
      passed: true,
    });
    // A decision's reason and a cancel's note in their events and audit entries; the same field elsewhere plain.
    const event = (type: string, data: unknown) => sealImportedRow('events', { type, data }, sealer()).data;
    expect(event('approval_decided', { decision: 'approve', reason: 'fine' })).toEqual({
      decision: 'approve',
      reason: T('fine'),
    });
    expect(event('turn_cancelled', { reason: 'user', note: 'n' })).toEqual({ reason: 'user', note: T('n') });
    expect(event('turn_failed', { reason: 'provider_error' })).toEqual({ reason: 'provider_error' });
    const audit = (action: string, details: unknown) =>
      sealImportedRow('audit_events', { action, details }, sealer()).details;
    expect(audit('approval.decided', { decision: 'deny', reason: 'no' })).toEqual({
      decision: 'deny',
      reason: T('no'),
    });
    expect(audit('turn.cancelled', { reason: 'user', note: 'n' })).toEqual({ reason: 'user', note: T('n') });
    expect(audit('agent.updated', { reason: 'r' })).toEqual({ reason: 'r' });
  });
});
