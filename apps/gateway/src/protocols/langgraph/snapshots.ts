import { Inject, Injectable } from '@nestjs/common';
import type { Message, Session, Turn } from '@prisma/client';
import {
  historyRefs,
  messagesOf,
  TurnTree,
  type ApprovalRow,
  type CheckpointRef,
  type HistoryQuery,
  type LangChainMessage,
  type RunSnapshot,
  type TurnLink,
} from '@switchboard/protocols';
import { LangGraphReads, STATE_MESSAGES } from './reads';

/** The turn statuses of a run paused at an interrupt (an approval, or the client's tools). */
const WAITING = new Set(['awaiting_approval', 'awaiting_client_tool']);

/** A thread's state as the adapter shows it: its messages, pending approvals and status turns. */
export interface Snapshot {
  messages: LangChainMessage[];
  pending: ApprovalRow[];
  latest: Turn[];
  /** The turn of each message, by message id. */
  turnOf: Map<string, string | null>;
}

/**
 * Reads a thread's state (docs/adr/0038): the transcript as LangChain messages, pending approvals as
 * interrupts; and its checkpoints (the time-travel addendum), each read back from the transcript —
 * the session's turns, with the rewinds that branched them, say which entries a state holds.
 */
@Injectable()
export class LangGraphSnapshots {
  constructor(@Inject(LangGraphReads) private readonly reads: LangGraphReads) {}

  /** The thread's current state: the transcript of its history (rewound turns left out). */
  async read(sessionId: string): Promise<Snapshot> {
    const [rows, pending, latest] = await Promise.all([
      this.reads.transcript(sessionId),
      this.reads.pending(sessionId),
      this.reads.statusTurns(sessionId),
    ]);
    return {
      messages: messagesOf(rows),
      pending,
      latest,
      turnOf: new Map(rows.map((r) => [r.id, r.turnId])),
    };
  }

  /** The session's checkpoint tree: its turns, with the rewinds that branched them. */
  async tree(sessionId: string): Promise<TurnTree> {
    return new TurnTree(await this.reads.turnLinks(sessionId));
  }

  /** A page of the thread's states, newest first (docs/adr/0038); 404 when `before` is not one of its. */
  async history(session: Session, q: HistoryQuery, tree?: TurnTree): Promise<RunSnapshot[]> {
    const t = tree ?? (await this.tree(session.id));
    return this.states(session.id, t, historyRefs(t, session.id, q));
  }

  /** The current state: the end of the newest run of the thread's history (its initial state when all were rewound). */
  async head(sessionId: string, tree?: TurnTree): Promise<RunSnapshot> {
    const t = tree ?? (await this.tree(sessionId));
    const ref = t.headRef();
    if (ref) return (await this.states(sessionId, t, [ref]))[0];
    // No run yet: no checkpoint.
    const rows = await this.reads.transcript(sessionId);
    return {
      ref: null,
      turn: null,
      parent: null,
      messages: messagesOf(rows),
      pending: [],
      paused: undefined,
    };
  }

  /** The state at one of the thread's checkpoints, by id (lower case, well formed), if it is one of its. */
  async at(sessionId: string, checkpointId: string, tree?: TurnTree): Promise<RunSnapshot | undefined> {
    const t = tree ?? (await this.tree(sessionId));
    const ref = t.resolve(sessionId, checkpointId);
    return ref ? (await this.states(sessionId, t, [ref]))[0] : undefined;
  }

  /** A run's two states, in the order they came: its input, then its end (the `checkpoints` stream mode). */
  async ofRun(sessionId: string, turnId: string): Promise<RunSnapshot[]> {
    const tree = await this.tree(sessionId);
    if (!tree.turn(turnId)) return [];
    return this.states(sessionId, tree, [
      { kind: 'input', turnId },
      { kind: 'end', turnId },
    ]);
  }

  /**
   * The states at `refs`, read together: the turns' rows, the transcript entries of the seqs the
   * page spans (of every branch) and, below it, the newest STATE_MESSAGES entries of each line the
   * page's states go back on (usually one); each state keeps the entries of its own line.
   */
  private async states(sessionId: string, tree: TurnTree, refs: CheckpointRef[]): Promise<RunSnapshot[]> {
    if (refs.length === 0) return [];
    const turnIds = [...new Set(refs.flatMap((r) => (r.kind === 'initial' ? [] : [r.turnId])))];
    const tops = turnIds.map((id) => tree.turn(id)!);
    const [turns, pending, open] = await Promise.all([
      this.reads.turnsByIds(sessionId, turnIds),
      this.reads.pending(sessionId),
      this.reads.statusTurns(sessionId),
    ]);
    const byId = new Map(turns.map((t) => [t.id, t]));
    const lo = Math.min(...tops.map((t) => t.seq));
    const hi = Math.max(...tops.map((t) => t.seq));
    // The line of each top below the page: from the first turn it followed older than the page.
    const entryOf = new Map<string, TurnLink | null>();
    for (const top of tops) {
      let e: TurnLink | null = top;
      while (e && e.seq >= lo) e = tree.parentOf(e);
      entryOf.set(top.id, e);
    }
    const entries = [...new Map([...entryOf.values()].flatMap((e) => (e ? [[e.id, e]] : []))).values()];
    const [within, ...below] = await Promise.all([
      tops.length > 0 ? this.reads.messagesWithin(sessionId, lo, hi) : Promise.resolve<Message[]>([]),
      ...entries.map((e) => this.reads.transcriptThrough(sessionId, e.seq, [...tree.offLine(e)])),
    ]);
    const belowOf = new Map(entries.map((e, i) => [e.id, below[i]]));
    const dicts = new Map<string, LangChainMessage>();
    const dictOf = (m: Message) => {
      let d = dicts.get(m.id);
      if (!d) dicts.set(m.id, (d = messagesOf([m])[0]));
      return d;
    };
    const seqOfTurn = new Map(tree.turns.map((t) => [t.id, t.seq]));

    return refs.map((ref): RunSnapshot => {
      const parent = tree.parentRef(ref);
      if (ref.kind === 'initial') {
        return { ref, turn: null, parent, messages: [], pending: [], paused: undefined };
      }
      const link = tree.turn(ref.turnId)!;
      const turn = byId.get(ref.turnId)!;
      const off = tree.offLine(link);
      // An input state holds the line before its turn, and the turn's input alone.
      const holds = (seq: number, id: string) =>
        seq <= link.seq &&
        !off.has(seq) &&
        (ref.kind === 'end' || seq < link.seq || id === turn.inputMessageId);
      const entry = entryOf.get(link.id);
      const rows = [
        ...(entry ? (belowOf.get(entry.id) ?? []) : []),
        ...within.filter((m) => holds(m.turnSeq, m.id)),
      ];
      // Approvals of the turns on the line (an input state's: before its turn).
      const onLine = (turnId: string) => {
        const seq = seqOfTurn.get(turnId);
        return seq !== undefined && !off.has(seq) && (ref.kind === 'end' ? seq <= link.seq : seq < link.seq);
      };
      return {
        ref,
        turn,
        parent,
        messages: rows.slice(Math.max(0, rows.length - STATE_MESSAGES)).map(dictOf),
        pending: pending.filter((a) => onLine(a.turnId)),
        paused: ref.kind === 'end' ? open.find((t) => WAITING.has(t.status) && onLine(t.id)) : undefined,
      };
    });
  }

  session(sessionId: string): Promise<Session | null> {
    return this.reads.sessionById(sessionId);
  }

  async turnStatus(tenantId: string, turnId: string): Promise<string | undefined> {
    return (await this.reads.turnById(tenantId, turnId))?.status;
  }

  /** A turn's input text (and images): what a run from its input checkpoint runs again. */
  async inputOf(sessionId: string, turnId: string): Promise<Message | null> {
    const [turn] = await this.reads.turnsByIds(sessionId, [turnId]);
    return turn ? this.reads.message(sessionId, turn.inputMessageId) : null;
  }

  /** Why a failed turn failed, for the `error` event and `__error__`. */
  async failureOf(tenantId: string, turnId: string): Promise<string> {
    const turn = await this.reads.turnById(tenantId, turnId);
    const f = turn?.failure as { kind?: string; brief?: string; message?: string } | null | undefined;
    return f
      ? `${f.kind ?? 'failed'}: ${f.brief || f.message || ''}`
      : `turn ${turnId} failed (${turn?.stopReason ?? 'failed'})`;
  }
}
