import { compactionNote, type CompactionRecord } from '@switchboard/engine';
import type { ChatMessage } from '@switchboard/providers';
import type { TranscriptEntry } from '@switchboard/store';
import { coherentHistory, toChatMessage } from './transcript';

/**
 * History and compaction in one place. The engine's context guard cuts the history it was given by
 * message index (`CompactionRecord`); a later turn loads its history by turn seq. So the cut is
 * stored on the session in turn seqs (`storedCompaction`, with the seq of each history message from
 * `buildHistory`), the claim loads only the first exchange and the turns from the cut on
 * (`TurnStore.claimNext`), and `buildHistory` puts the note (the summary when one was written) back
 * where the middle was.
 */

/** A session's compaction as stored: the cut in turn seqs, and what stands in for the middle. */
export interface StoredCompaction {
  headThroughSeq: number;
  keepFromSeq: number;
  droppedMessages: number;
  summary: string | null;
}

/** The session's stored compaction, or null when there is none (or it is not one). */
export function parseCompaction(json: unknown): StoredCompaction | null {
  const c = json as Partial<StoredCompaction> | null;
  if (!c || !Number.isInteger(c.headThroughSeq) || !Number.isInteger(c.keepFromSeq)) return null;
  return {
    headThroughSeq: c.headThroughSeq!,
    keepFromSeq: c.keepFromSeq!,
    droppedMessages: Number(c.droppedMessages) || 0,
    summary: typeof c.summary === 'string' ? c.summary : null,
  };
}

/**
 * Earlier turns as the engine sees them, with each message's turn seq: the
 * coherent transcript, and for a compacted session the note standing in for
 * the middle between the first exchange and the kept turns.
 */
export function buildHistory(
  earlier: TranscriptEntry[],
  compaction: StoredCompaction | null,
): { messages: ChatMessage[]; seqs: number[] } {
  const seqOf = new Map<ChatMessage, number>();
  const all = earlier.map((m) => {
    const chat = toChatMessage(m);
    seqOf.set(chat, m.turnSeq);
    return chat;
  });
  const coherent = coherentHistory(all);
  // An answer coherentHistory adds for a call without a result follows its round: the round's seq.
  const seqs: number[] = [];
  for (const m of coherent) seqs.push(seqOf.get(m) ?? seqs[seqs.length - 1]);
  if (!compaction) return { messages: coherent, seqs };
  const at = seqs.findIndex((s) => s >= compaction.keepFromSeq);
  const cut = at === -1 ? coherent.length : at;
  const note = compactionNote(compaction.droppedMessages, compaction.summary);
  return {
    messages: [...coherent.slice(0, cut), ...note, ...coherent.slice(cut)],
    seqs: [...seqs.slice(0, cut), ...note.map(() => compaction.keepFromSeq - 1), ...seqs.slice(cut)],
  };
}

/**
 * The engine's cut of the history it was given (`seqs`: each history message's turn seq, from
 * `buildHistory`) as the session stores it; undefined when the cut does not fall on loaded messages.
 */
export function storedCompaction(c: CompactionRecord, seqs: readonly number[]): StoredCompaction | undefined {
  const headThroughSeq = seqs[c.headEnd - 1];
  const keepFromSeq = seqs[c.tailStart];
  if (headThroughSeq === undefined || keepFromSeq === undefined) return undefined;
  return { headThroughSeq, keepFromSeq, droppedMessages: c.droppedMessages, summary: c.summary };
}
