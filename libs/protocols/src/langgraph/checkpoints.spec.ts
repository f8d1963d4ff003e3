import {
  candidatesOf,
  checkpointIdOfRef,
  historyRefs,
  initialCheckpointId,
  inputCheckpointId,
  runOriginOf,
  stateOriginOf,
  TurnTree,
  type CheckpointRef,
  type TurnLink,
} from './checkpoints';
import { LangGraphError } from './errors';

const THREAD = '01900000-0000-7000-8000-0000000000ff';
const id = (n: number) => `01900000-0000-7000-8000-00000000000${n}`;
const at = (s: number) => new Date(Date.UTC(2026, 11, 9, 10, 0, s));

/** Runs 1-3; a run from the end of 1 (2 and 3 rewound at R1) is 4; a run from the end of 1 again (4
 * rewound at R2) is 5; a run from the initial state (1 and 5 rewound at R3) is 6. */
const R1 = at(10);
const R2 = at(20);
const R3 = at(30);
const TURNS: TurnLink[] = [
  { id: id(1), seq: 1, rewoundAt: R3 },
  { id: id(2), seq: 2, rewoundAt: R1 },
  { id: id(3), seq: 3, rewoundAt: R1 },
  { id: id(4), seq: 4, rewoundAt: R2 },
  { id: id(5), seq: 5, rewoundAt: R3 },
  { id: id(6), seq: 6, rewoundAt: null },
];

const refused = (f: () => unknown, status: number, detail: RegExp) => {
  let thrown: unknown;
  try {
    f();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(LangGraphError);
  expect((thrown as LangGraphError).status).toBe(status);
  expect((thrown as LangGraphError).detail).toMatch(detail);
};

const name = (r: CheckpointRef | null) =>
  r === null
    ? null
    : r.kind === 'initial'
      ? 'initial'
      : `${r.kind}${TURNS.findIndex((t) => t.id === r.turnId) + 1}`;

describe('LangGraph checkpoints over a session’s turns (docs/adr/0038, time travel)', () => {
  it('derives the input and initial ids as version-8 twins of the run and thread ids, and reads them back', () => {
    expect(inputCheckpointId(id(1))).toBe('01900000-0000-8000-8000-000000000001');
    expect(initialCheckpointId(THREAD.toUpperCase())).toBe('01900000-0000-8000-8000-0000000000ff');
    expect(candidatesOf(THREAD, initialCheckpointId(THREAD))).toEqual({ kind: 'initial' });
    expect(candidatesOf(THREAD, id(3))).toEqual({ kind: 'end', turnId: id(3) });
    const input = candidatesOf(THREAD, inputCheckpointId(id(3)));
    expect(input.kind).toBe('input');
    expect(input.kind === 'input' && input.turnIds).toContain(id(3));
    expect(input.kind === 'input' && input.turnIds).toHaveLength(15);
  });

  it('parents follow the rewinds: the live turns are one line, each rewound turn hangs off the turn it followed', () => {
    const tree = new TurnTree([...TURNS].reverse());
    const parent = (n: number) => tree.parentOf(TURNS[n - 1])?.seq ?? null;
    expect([1, 2, 3, 4, 5, 6].map(parent)).toEqual([null, 1, 2, 1, 1, null]);
    expect(tree.head()?.seq).toBe(6);
    expect(name(tree.headRef())).toBe('end6');
    // The entries of the other branches a state leaves out.
    expect([...tree.offLine(TURNS[2])]).toEqual([]);
    expect([...tree.offLine(TURNS[4])].sort()).toEqual([2, 3, 4]);
    expect([...tree.offLine(TURNS[5])].sort()).toEqual([1, 2, 3, 4, 5]);
    expect(tree.refs().map(name)).toEqual([
      'end6',
      'input6',
      'end5',
      'input5',
      'end4',
      'input4',
      'end3',
      'input3',
      'end2',
      'input2',
      'end1',
      'input1',
      'initial',
    ]);
    expect(tree.refs().map((r) => name(tree.parentRef(r)))).toEqual([
      'input6',
      'initial',
      'input5',
      'end1',
      'input4',
      'end1',
      'input3',
      'end2',
      'input2',
      'end1',
      'input1',
      'initial',
      null,
    ]);
    expect(name(tree.resolve(THREAD, inputCheckpointId(id(4))) ?? null)).toBe('input4');
    expect(name(tree.resolve(THREAD, initialCheckpointId(THREAD)) ?? null)).toBe('initial');
    expect(tree.resolve(THREAD, '01900000-0000-7000-8000-0000000000ee')).toBeUndefined();
    expect(tree.resolve(THREAD, '01900000-0000-8000-8000-0000000000ee')).toBeUndefined();
    expect(tree.isLeft({ kind: 'end', turnId: id(5) })).toBe(true);
    expect(tree.isLeft({ kind: 'input', turnId: id(6) })).toBe(false);
    expect(tree.isLeft({ kind: 'initial' })).toBe(false);
  });

  it('a session with no rewind is one line; with no turn it has no checkpoint', () => {
    const tree = new TurnTree(TURNS.slice(0, 3).map((t) => ({ ...t, rewoundAt: null })));
    expect([1, 2, 3].map((n) => tree.parentOf(TURNS[n - 1])?.seq ?? null)).toEqual([null, 1, 2]);
    expect([...tree.offLine(TURNS[2])]).toEqual([]);
    expect(new TurnTree([]).refs()).toEqual([]);
    expect(new TurnTree([]).headRef()).toBeNull();
    expect(new TurnTree([]).resolve(THREAD, initialCheckpointId(THREAD))).toBeUndefined();
    // Every turn rewound: the thread stands at its initial state.
    const all = new TurnTree(TURNS.slice(0, 2).map((t) => ({ ...t, rewoundAt: R1 })));
    expect(name(all.headRef())).toBe('initial');
  });

  it('pages the history: before a checkpoint, one checkpoint, step / run / source, limit', () => {
    const tree = new TurnTree(TURNS);
    const page = (q: Parameters<typeof historyRefs>[2]) => historyRefs(tree, THREAD, q).map(name);
    expect(page({ limit: 3 })).toEqual(['end6', 'input6', 'end5']);
    expect(page({ limit: 3, before: id(5) })).toEqual(['input5', 'end4', 'input4']);
    expect(page({ limit: 10, before: inputCheckpointId(id(1)) })).toEqual(['initial']);
    expect(page({ limit: 10, before: initialCheckpointId(THREAD) })).toEqual([]);
    expect(page({ limit: 10, seq: 4 })).toEqual(['end4', 'input4']);
    expect(page({ limit: 10, seq: 4, source: 'loop' })).toEqual(['end4']);
    expect(page({ limit: 10, seq: -1 })).toEqual(['initial']);
    expect(page({ limit: 10, source: 'input', before: id(2) })).toEqual(['input2', 'input1', 'initial']);
    expect(page({ limit: 10, turnId: id(3) })).toEqual(['end3', 'input3']);
    expect(page({ limit: 10, only: inputCheckpointId(id(2)) })).toEqual(['input2']);
    expect(page({ limit: 0 })).toEqual([]);
    refused(() => page({ limit: 1, before: '01900000-0000-7000-8000-0000000000ee' }), 404, /before/);
  });

  it('a run from a checkpoint: the current one is a plain run, a past one of the branch rewinds the later runs', () => {
    // Runs 1-3 live, 4 and 5 off a rewind of 2.. (at R1), the branch now 1 → 2' (seq 6).
    const turns: TurnLink[] = [
      { id: id(1), seq: 1, rewoundAt: null },
      { id: id(2), seq: 2, rewoundAt: R1 },
      { id: id(3), seq: 3, rewoundAt: R1 },
      { id: id(4), seq: 4, rewoundAt: null },
      { id: id(5), seq: 5, rewoundAt: null },
    ];
    const tree = new TurnTree(turns);
    const origin = (ref: CheckpointRef, input: boolean) => {
      const o = runOriginOf(tree, THREAD, ref, input);
      return o.kind === 'head'
        ? 'head'
        : `rewind from ${o.rewindFrom.seq}${o.rerun ? `, rerun ${o.rerun.seq}` : ''}`;
    };
    expect(origin({ kind: 'end', turnId: id(5) }, true)).toBe('head');
    expect(origin({ kind: 'end', turnId: id(1) }, true)).toBe('rewind from 4');
    expect(origin({ kind: 'end', turnId: id(4) }, true)).toBe('rewind from 5');
    expect(origin({ kind: 'initial' }, true)).toBe('rewind from 1');
    // From a run's input with no input: that run again (its own and the later ones rewound).
    expect(origin({ kind: 'input', turnId: id(4) }, false)).toBe('rewind from 4, rerun 4');
    expect(origin({ kind: 'input', turnId: id(5) }, false)).toBe('rewind from 5, rerun 5');
    refused(() => origin({ kind: 'input', turnId: id(4) }, true), 422, /takes no input/);
    refused(() => origin({ kind: 'end', turnId: id(1) }, false), 422, /nothing left to run/);
    refused(() => origin({ kind: 'initial' }, false), 422, /nothing left to run/);
    // A left branch: 409, naming the fork.
    refused(() => origin({ kind: 'end', turnId: id(3) }, true), 409, /branch that was left.*fork/);
    refused(() => origin({ kind: 'input', turnId: id(2) }, false), 409, /branch that was left/);
  });

  it('updateState with no values: the thread goes on from the checkpoint', () => {
    const tree = new TurnTree(TURNS.slice(0, 3).map((t) => ({ ...t, rewoundAt: null })));
    const origin = (ref: CheckpointRef) => {
      const o = stateOriginOf(tree, THREAD, ref);
      return o.kind === 'head' ? 'head' : `rewind from ${o.rewindFrom.seq}`;
    };
    expect(origin({ kind: 'end', turnId: id(3) })).toBe('head');
    expect(origin({ kind: 'end', turnId: id(1) })).toBe('rewind from 2');
    expect(origin({ kind: 'initial' })).toBe('rewind from 1');
    refused(() => origin({ kind: 'input', turnId: id(2) }), 422, /run's input/);
    expect(checkpointIdOfRef(THREAD, { kind: 'input', turnId: id(2) })).toBe(inputCheckpointId(id(2)));
  });
});
