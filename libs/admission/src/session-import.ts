import {
  AgentStoppedError,
  TenantPausedError,
  defaultTrust,
  deriveAuthorityClass,
  newId,
  type AdmissionContext,
  type DeliverySurface,
  type MessageKind,
  type MessageOrigin,
} from '@switchboard/contracts';
import { sealJson, sealText, type Db, type Prisma } from '@switchboard/database';

/** A message of a conversation held elsewhere, carried into a new session. */
export interface ImportedMessage {
  role: 'user' | 'assistant';
  text: string;
}

/**
 * A new session seeded with a conversation its client held so far (docs/adr/0016). Both sides of
 * that history were written by the caller, so every message carries the caller's provenance: the
 * envelope fields (trust, authority class) derive from `kind` and `origin` as `Admission.admit`
 * derives them.
 */
export interface SessionImport {
  /** The session's id: a retry that derives the same id lands in the same session. */
  sessionId: string;
  tenantId: string;
  agentId: string;
  /** The session's metadata. */
  metadata: Record<string, unknown>;
  history: readonly ImportedMessage[];
  /** The caller's provenance, as it would be admitted. */
  kind: MessageKind;
  origin: MessageOrigin;
  deliverySurface: DeliverySurface;
  admissionContext: AdmissionContext;
  /** Each imported message's metadata. */
  messageMetadata: Record<string, unknown>;
}

/**
 * `created`: the session is new (and seeded); `exists`: a session with the id was there already
 * (a retry), of this agent; `other_agent`: it was there already, of another agent (or of another
 * tenant), and nothing was written.
 */
export type SessionImportResult = 'created' | 'exists' | 'other_agent';

/**
 * Creates the session, and when there is a history, the history as the session's first turn, ended
 * as `imported` (`completed`, stop reason `imported`, the last assistant text as its final text):
 * every later turn's history starts with it, and nothing runs it. One transaction; a session that
 * exists already is left as it is. A paused tenant (docs/adr/0030) and a stopped agent (docs/adr/0031)
 * get nothing (`TenantPausedError`, `AgentStoppedError`, before anything is written): the session is
 * only ever made for an admission, which would be refused — the one refusal point of every way in
 * that makes a session (AgentTurns.session), as the admission statement is for an existing one.
 */
export async function importSession(db: Db, s: SessionImport): Promise<SessionImportResult> {
  const imported = s.history.length > 0;
  // The history as stored: sealed for an encrypting tenant (docs/adr/0067), before the transaction.
  const bodies = await Promise.all(
    s.history.map((h) => sealJson(s.tenantId, { type: 'text', text: h.text })),
  );
  const lastAssistant = s.history.filter((h) => h.role === 'assistant').at(-1);
  const finalText = await sealText(s.tenantId, lastAssistant?.text ?? null);
  const created = await db.$transaction(async (tx) => {
    // Refused before anything is written: a paused tenant (docs/adr/0030), a stopped agent (0031).
    const [refusal] = await tx.$queryRaw<{ kill_switch: boolean; stopped: boolean | null }[]>`
      SELECT t.kill_switch,
        (SELECT a.lifecycle = 'stopped' FROM agents a
          WHERE a.id = ${s.agentId}::uuid AND a.tenant_id = t.id) AS stopped
      FROM tenants t WHERE t.id = ${s.tenantId}::uuid`;
    if (refusal?.kill_switch) throw new TenantPausedError();
    if (refusal?.stopped) throw new AgentStoppedError(s.agentId);
    const inserted = await tx.session.createMany({
      data: [
        {
          id: s.sessionId,
          tenantId: s.tenantId,
          agentId: s.agentId,
          metadata: s.metadata as Prisma.InputJsonValue,
          lastTurnSeq: imported ? 1 : 0,
        },
      ],
      skipDuplicates: true,
    });
    if (inserted.count === 0) return false;
    if (!imported) return true;
    const turnId = newId();
    const messageIds = s.history.map(() => newId());
    await tx.message.createMany({
      data: s.history.map((h, position) => ({
        id: messageIds[position],
        tenantId: s.tenantId,
        agentId: s.agentId,
        sessionId: s.sessionId,
        turnId,
        turnSeq: 1,
        position,
        role: h.role,
        kind: s.kind,
        origin: s.origin,
        trust: defaultTrust(s.origin),
        authorityClass: deriveAuthorityClass(s.kind),
        deliverySurface: s.deliverySurface,
        admissionContext: s.admissionContext,
        body: bodies[position],
        metadata: s.messageMetadata as Prisma.InputJsonValue,
      })),
    });
    const now = new Date();
    await tx.turn.create({
      data: {
        id: turnId,
        tenantId: s.tenantId,
        sessionId: s.sessionId,
        agentId: s.agentId,
        seq: 1,
        inputMessageId: messageIds[0],
        status: 'completed',
        stopReason: 'imported',
        finalText,
        startedAt: now,
        completedAt: now,
      },
    });
    return true;
  });
  if (created) return 'created';
  const session = await db.session.findFirst({
    where: { id: s.sessionId, tenantId: s.tenantId },
    select: { agentId: true },
  });
  return session?.agentId === s.agentId ? 'exists' : 'other_agent';
}
