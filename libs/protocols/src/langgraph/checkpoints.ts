import { LangGraphError } from './errors';

/**
 * A LangGraph thread's checkpoints over a Switchboard session (docs/adr/0038, time travel): plain
 * functions over the session's turns; nothing is stored for them.
 *
 * A thread with turns has `2n + 1` checkpoints:
 * - **initial**: the empty state before the first run; its id is the thread id's version-8 twin;
 * - **input** of each turn: the state once the run's human message is in, before the model ran
 *   (`next: ['agent']`); its id is the run id's version-8 twin (the run ids are UUIDv7);
 * - **end** of each turn: the state at its end (or where it is now); its id is the run id.
 *
 * Parents follow the turns a rewind left: a turn's input has as parent the end of the turn it
 * followed (the newest turn that was still in the session's history when it was admitted), or the
 * initial state; a turn's end has its input.
 */

/** Where a UUID's version digit is in its text. */
const VERSION_AT = 14;
/** The version of the checkpoint ids derived from the thread's and the runs' ids (RFC 9562's custom UUIDs). */
const DERIVED = '8';

const withVersion = (id: string, v: string) => id.slice(0, VERSION_AT) + v + id.slice(VERSION_AT + 1);

/** The checkpoint of the state once a run's input is in, before its model ran: the run id with version 8. */
export const inputCheckpointId = (turnId: string): string => withVersion(turnId.toLowerCase(), DERIVED);

/** The checkpoint of a thread's initial, empty state: the thread id with version 8. */
export const initialCheckpointId = (threadId: string): string => withVersion(threadId.toLowerCase(), DERIVED);

/** Which of a thread's states a checkpoint is. */
export type CheckpointRef = { kind: 'initial' } | { kind: 'input' | 'end'; turnId: string };

export const checkpointIdOfRef = (threadId: string, ref: CheckpointRef): string =>
  ref.kind === 'initial'
    ? initialCheckpointId(threadId)
    : ref.kind === 'input'
      ? inputCheckpointId(ref.turnId)
      : ref.turnId;

/**
 * What a (well-formed, lower-case) checkpoint id can name in a thread: its initial state, the input
 * state of a run whose id is one of `turnIds` (a version-8 id: the run ids it may be the twin of),
 * or the end of the run with that id.
 */
export function candidatesOf(
  threadId: string,
  id: string,
): { kind: 'initial' } | { kind: 'input'; turnIds: string[] } | { kind: 'end'; turnId: string } {
  if (id === initialCheckpointId(threadId)) return { kind: 'initial' };
  if (id[VERSION_AT] === DERIVED) {
    const turnIds = [...'0123456789abcdef'].filter((v) => v !== DERIVED).map((v) => withVersion(id, v));
    return { kind: 'input', turnIds };
  }
  return { kind: 'end', turnId: id };
}

/** A turn as the checkpoint tree needs it. */
export interface TurnLink {
  id: string;
  seq: number;
  /** When a rewind left it out of the session's history (docs/adr/0053); null while it is in. */
  rewoundAt: Date | null;
}

/**
 * The tree a session's rewinds make of its turns. A rewind marks a turn and every later turn still
 * in the history, in one statement (one `rewound_at` for all of them), and is refused while a turn
 * is unfinished; so turn `j` (older than `m`) was in the history when `m` was admitted exactly when
 * `j` is still in it, or both were rewound and `j` no earlier than `m`. A turn's parent is the newest
 * such `j`: the live turns form one line (the session's history), each rewound turn hangs off the
 * turn it followed.
 */
export class TurnTree {
  /** Oldest first. */
  readonly turns: readonly TurnLink[];
  private readonly parents = new Map<string, TurnLink | null>();
  private readonly byId = new Map<string, TurnLink>();

  constructor(turns: readonly TurnLink[]) {
    this.turns = [...turns].sort((a, b) => a.seq - b.seq);
    let lastLive: TurnLink | null = null;
    this.turns.forEach((m, i) => {
      this.byId.set(m.id, m);
      if (m.rewoundAt === null) {
        this.parents.set(m.id, lastLive);
        lastLive = m;
        return;
      }
      const at = m.rewoundAt.getTime();
      let parent: TurnLink | null = null;
      for (let j = i - 1; j >= 0; j--) {
        const c = this.turns[j];
        if (c.rewoundAt === null || c.rewoundAt.getTime() >= at) {
          parent = c;
          break;
        }
      }
      this.parents.set(m.id, parent);
    });
  }

  turn(id: string): TurnLink | undefined {
    return this.byId.get(id);
  }

  /** The turn `t` followed; null for a turn admitted into an empty history. */
  parentOf(t: TurnLink): TurnLink | null {
    return this.parents.get(t.id) ?? null;
  }

  /** The newest turn still in the session's history: the end of it is the thread's current state. */
  head(): TurnLink | null {
    for (let i = this.turns.length - 1; i >= 0; i--)
      if (this.turns[i].rewoundAt === null) return this.turns[i];
    return null;
  }

  /** The turns in the history, oldest first. */
  live(): TurnLink[] {
    return this.turns.filter((t) => t.rewoundAt === null);
  }

  /**
   * The seqs of the turns older than `top` that are not on its line (rewound turns of other
   * branches): the state at `top` is every transcript entry up to its turn seq but theirs. Live turns
   * older than `top` are always on its line, so this is a subset of the rewound turns.
   */
  offLine(top: TurnLink): Set<number> {
    const onLine = new Set<number>();
    for (let t: TurnLink | null = top; t && t.rewoundAt !== null; t = this.parentOf(t)) onLine.add(t.seq);
    return new Set(
      this.turns
        .filter((t) => t.rewoundAt !== null && t.seq < top.seq && !onLine.has(t.seq))
        .map((t) => t.seq),
    );
  }

  /** Whether turn seq `seq` is on the line that ends at `top` (null: the initial state's empty line). */
  onLine(top: TurnLink | null, seq: number, off = top ? this.offLine(top) : undefined): boolean {
    return top !== null && seq <= top.seq && !off!.has(seq);
  }

  /**
   * Every checkpoint of the thread, newest first (by turn seq: the order they came into being, as
   * LangGraph lists a thread's checkpoints by their time-ordered ids): each turn's end then its input,
   * the initial state last. None for a session without turns.
   */
  refs(): CheckpointRef[] {
    if (this.turns.length === 0) return [];
    const out: CheckpointRef[] = [];
    for (let i = this.turns.length - 1; i >= 0; i--) {
      out.push({ kind: 'end', turnId: this.turns[i].id }, { kind: 'input', turnId: this.turns[i].id });
    }
    out.push({ kind: 'initial' });
    return out;
  }

  /** A checkpoint's parent; null for the initial state. */
  parentRef(ref: CheckpointRef): CheckpointRef | null {
    if (ref.kind === 'initial') return null;
    if (ref.kind === 'end') return { kind: 'input', turnId: ref.turnId };
    const t = this.byId.get(ref.turnId);
    const p = t ? this.parentOf(t) : null;
    return p ? { kind: 'end', turnId: p.id } : { kind: 'initial' };
  }

  /** The checkpoint a well-formed id names in this session, if it is one of its. */
  resolve(threadId: string, id: string): CheckpointRef | undefined {
    const c = candidatesOf(threadId, id);
    if (c.kind === 'initial') return this.turns.length > 0 ? c : undefined;
    if (c.kind === 'end') return this.byId.has(c.turnId) ? c : undefined;
    const turnId = c.turnIds.find((t) => this.byId.has(t));
    return turnId ? { kind: 'input', turnId } : undefined;
  }

  /** The thread's current state: the end of the newest live turn, or the initial state when every turn was rewound. */
  headRef(): CheckpointRef | null {
    if (this.turns.length === 0) return null;
    const head = this.head();
    return head ? { kind: 'end', turnId: head.id } : { kind: 'initial' };
  }

  /** Whether a checkpoint lies on a branch a rewind left (a rewound turn's input or end). */
  isLeft(ref: CheckpointRef): boolean {
    return ref.kind !== 'initial' && (this.byId.get(ref.turnId)?.rewoundAt ?? null) !== null;
  }
}

/** A history page's narrowing (docs/adr/0038): before a checkpoint, one checkpoint, metadata equalities. */
export interface HistoryQuery {
  /** A checkpoint id of the thread: only the states older than it. */
  before?: string | null;
  /** One checkpoint id: only that state. */
  only?: string | null;
  /** `step` (the turn's seq; -1 the initial state), `run_id`, `source` ('input' | 'loop'). */
  seq?: number;
  turnId?: string;
  source?: string;
  limit: number;
}

/** The refs of a history page, newest first; 404 when `before` is not one of the thread's. */
export function historyRefs(tree: TurnTree, threadId: string, q: HistoryQuery): CheckpointRef[] {
  let refs = tree.refs();
  if (q.before) {
    const at = refs.findIndex((r) => checkpointIdOfRef(threadId, r) === q.before);
    if (at < 0)
      throw new LangGraphError(404, `before: checkpoint ${q.before} not found in thread ${threadId}`);
    refs = refs.slice(at + 1);
  }
  const seqOf = (r: CheckpointRef) => (r.kind === 'initial' ? -1 : (tree.turn(r.turnId)?.seq ?? NaN));
  return refs
    .filter(
      (r) =>
        (!q.only || checkpointIdOfRef(threadId, r) === q.only) &&
        (q.seq === undefined || seqOf(r) === q.seq) &&
        (q.turnId === undefined || (r.kind !== 'initial' && r.turnId === q.turnId)) &&
        (q.source === undefined || sourceOf(r) === q.source),
    )
    .slice(0, q.limit);
}

/** A checkpoint's `metadata.source`: `input` for the initial state and a run's input, `loop` for a run's end. */
export const sourceOf = (ref: CheckpointRef): 'input' | 'loop' => (ref.kind === 'end' ? 'loop' : 'input');

/**
 * What going on from a checkpoint does to the session: nothing (`head`: the thread's current
 * state), or a rewind of the live turns from `rewindFrom` on (docs/adr/0053: they stay in the journal,
 * marked rewound, out of the model's history), after which a run is admitted — with `rerun`, that
 * turn's own input again (a run from its input checkpoint with no input).
 */
export type CheckpointOrigin = { kind: 'head' } | { kind: 'rewind'; rewindFrom: TurnLink; rerun?: TurnLink };

const describe = (threadId: string, ref: CheckpointRef) => `checkpoint ${checkpointIdOfRef(threadId, ref)}`;

/** A checkpoint on a branch a rewind left cannot be gone on from in the thread: 409, naming the way out. */
function refuseLeft(tree: TurnTree, threadId: string, ref: CheckpointRef): void {
  if (!tree.isLeft(ref)) return;
  throw new LangGraphError(
    409,
    `${describe(threadId, ref)} is on a branch that was left by a run from an earlier checkpoint (its runs were ` +
      'rewound): a thread goes on only from its current branch. Fork the session at that run ' +
      `(POST /v1/sessions/${threadId}/fork) to go on from it in a new thread`,
  );
}

/** The oldest live turn after `seq`: where a rewind to the state at `seq` starts. */
function firstLiveAfter(tree: TurnTree, seq: number): TurnLink | undefined {
  return tree.turns.find((t) => t.rewoundAt === null && t.seq > seq);
}

/**
 * A run from a checkpoint (docs/adr/0038, time travel). From the current state: a plain run. From a
 * past state of the current branch: the later runs are rewound and the run's message goes on from
 * that state — so the run needs a message, except from a run's input checkpoint (the state before its
 * model ran), whose run is that input again and takes none (LangGraph re-executes the nodes after a
 * checkpoint; from a state with nothing next, a run without input does nothing, refused here: 422).
 * A checkpoint on a left branch: 409.
 */
export function runOriginOf(
  tree: TurnTree,
  threadId: string,
  ref: CheckpointRef,
  hasInput: boolean,
): CheckpointOrigin {
  refuseLeft(tree, threadId, ref);
  const head = tree.headRef();
  if (head && checkpointIdOfRef(threadId, head) === checkpointIdOfRef(threadId, ref)) return { kind: 'head' };
  if (ref.kind === 'input') {
    if (hasInput) {
      throw new LangGraphError(
        422,
        `${describe(threadId, ref)} is a run's input (the state before its model ran): a run from it runs that ` +
          'input again and takes no input. To send another message instead, run from its parent checkpoint',
      );
    }
    const t = tree.turn(ref.turnId)!;
    return { kind: 'rewind', rewindFrom: t, rerun: t };
  }
  if (!hasInput) {
    throw new LangGraphError(
      422,
      `${describe(threadId, ref)} has nothing left to run (next is empty): send one human message to go on ` +
        "from it, or run from a run's input checkpoint (its parent) with no input to run that input again",
    );
  }
  const seq = ref.kind === 'initial' ? 0 : tree.turn(ref.turnId)!.seq;
  return { kind: 'rewind', rewindFrom: firstLiveAfter(tree, seq)! };
}

/**
 * `updateState` with no values (LangGraph's fork of a checkpoint, `as_node: '__copy__'`): the thread
 * goes on from that state. The current state: nothing changes; a past state of the current branch:
 * the later runs are rewound. A run's input cannot become the thread's state without its run (422);
 * a left branch: 409.
 */
export function stateOriginOf(tree: TurnTree, threadId: string, ref: CheckpointRef): CheckpointOrigin {
  refuseLeft(tree, threadId, ref);
  const head = tree.headRef();
  if (head && checkpointIdOfRef(threadId, head) === checkpointIdOfRef(threadId, ref)) return { kind: 'head' };
  if (ref.kind === 'input') {
    throw new LangGraphError(
      422,
      `${describe(threadId, ref)} is a run's input (the state before its model ran): the thread cannot stop ` +
        'there without running it. Run from it (runs with this checkpoint_id and no input) to run that input again',
    );
  }
  const seq = ref.kind === 'initial' ? 0 : tree.turn(ref.turnId)!.seq;
  return { kind: 'rewind', rewindFrom: firstLiveAfter(tree, seq)! };
}
