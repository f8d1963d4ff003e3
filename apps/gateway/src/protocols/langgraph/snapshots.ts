import { Inject, Injectable } from '@nestjs/common';
import type { Session, Turn } from '@prisma/client';
import {
  messagesOf,
  type ApprovalRow,
  type LangChainMessage,
  type RunSnapshot,
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

/** Reads a thread's state (docs/adr/0038): the transcript as LangChain messages, pending approvals as interrupts. */
@Injectable()
export class LangGraphSnapshots {
  constructor(@Inject(LangGraphReads) private readonly reads: LangGraphReads) {}

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

  /**
   * The thread's states at the end of its runs, newest first (docs/adr/0038): one per turn, each
   * with the run before it as its parent; those before `beforeSeq`, or the one of a seq or run id.
   */
  async runs(
    sessionId: string,
    q: { beforeSeq?: number; seq?: number; turnId?: string; limit: number },
  ): Promise<RunSnapshot[]> {
    if (q.limit === 0) return [];
    // One more than the page: the oldest state's parent.
    const turns = await this.reads.checkpointTurns(sessionId, { ...q, take: q.limit + 1 });
    const page = turns.slice(0, q.limit);
    const oldest = page.at(-1);
    if (!oldest) return [];
    const narrowed = q.seq !== undefined || q.turnId !== undefined;
    const [lastParent, rows, pending, open] = await Promise.all([
      turns.length > q.limit && !narrowed
        ? turns[q.limit].id
        : this.reads.previousTurnId(sessionId, oldest.seq),
      this.reads.transcriptThrough(sessionId, oldest.seq, page[0].seq),
      this.reads.pending(sessionId),
      this.reads.statusTurns(sessionId),
    ]);
    const messages = messagesOf(rows);
    const seqOf = new Map(open.map((t) => [t.id, t.seq]));
    return page.map((turn, i) => {
      // Rows are in transcript order: the state at a run is every entry up to its last one.
      let end = rows.length;
      while (end > 0 && rows[end - 1].turnSeq > turn.seq) end--;
      return {
        turn,
        parentId: i + 1 < page.length ? page[i + 1].id : lastParent,
        messages: messages.slice(Math.max(0, end - STATE_MESSAGES), end),
        pending: pending.filter((a) => (seqOf.get(a.turnId) ?? Infinity) <= turn.seq),
        paused: open.find((t) => WAITING.has(t.status) && t.seq <= turn.seq),
      };
    });
  }

  /** The current state: the state at the end of the newest run (what a thread with no run has, else). */
  async head(sessionId: string): Promise<RunSnapshot> {
    const [newest] = await this.runs(sessionId, { limit: 1 });
    if (newest) return newest;
    const rows = await this.reads.transcript(sessionId);
    return { turn: null, parentId: null, messages: messagesOf(rows), pending: [], paused: undefined };
  }

  /** The state at the end of one run of the thread, if it is one. */
  async at(sessionId: string, turnId: string): Promise<RunSnapshot | undefined> {
    return (await this.runs(sessionId, { turnId, limit: 1 }))[0];
  }

  session(sessionId: string): Promise<Session | null> {
    return this.reads.sessionById(sessionId);
  }

  async turnStatus(tenantId: string, turnId: string): Promise<string | undefined> {
    return (await this.reads.turnById(tenantId, turnId))?.status;
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
