import type { components } from '@switchboard/client';

/**
 * The turn page's pure logic (apps/console/src/pages/turns): GET /v1/turns/:id/timeline turned into
 * waterfall rows (offsets and widths as shares of the turn's span, each with a sentence for screen
 * readers), and the small readings the page shows (durations, sizes, retry or fallback, compaction).
 */
export type TurnTimeline = components['schemas']['TurnTimeline'];
export type TimelineRound = TurnTimeline['rounds'][number];
export type TimelineToolCall = TimelineRound['toolCalls'][number];
export type TimelineChild = TurnTimeline['children'][number];
export type TimelineHook = TurnTimeline['hooks'][number];
export type ProviderAttempt = TimelineRound['attempts'][number];
export type RoundContext = components['schemas']['RoundContext'];

export const ENDED = ['completed', 'failed', 'cancelled'];
export const isEnded = (status: string): boolean => ENDED.includes(status);

/** A duration for people: `850 ms`, `1.2 s`, `2 min 05 s`, `1 h 02 min`. */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const v = Math.max(0, ms);
  if (v < 1000) return `${Math.round(v)} ms`;
  if (v < 60_000) return `${(v / 1000).toFixed(v < 10_000 ? 1 : 0)} s`;
  const s = Math.round(v / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** A size in bytes for people: `512 B`, `1.5 kB`, `2.0 MB` (powers of 1000, as the API counts UTF-8 bytes). */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  if (n < 1000) return `${n} B`;
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)} kB`;
  return `${(n / 1_000_000).toFixed(1)} MB`;
}

/**
 * What an attempt of a round was: the round's first, a retry on the same model, or a fallback to
 * another model (the engine moves to the next model once the retries of one are exhausted).
 */
export function attemptKind(attempts: readonly ProviderAttempt[], i: number): 'first' | 'retry' | 'fallback' {
  if (i === 0) return 'first';
  return attempts[i].model !== attempts[i - 1].model ? 'fallback' : 'retry';
}

/** A tool result's size before and after TokenJuice's compaction, as one phrase. */
export function compactionText(call: Pick<TimelineToolCall, 'resultBytes' | 'compactedBytes'>): string {
  if (call.resultBytes === null) return 'no result';
  if (call.compactedBytes === null) return `${formatBytes(call.resultBytes)}, not compacted`;
  const saved = call.resultBytes > 0 ? Math.round((1 - call.compactedBytes / call.resultBytes) * 100) : 0;
  return `${formatBytes(call.resultBytes)} → ${formatBytes(call.compactedBytes)} after compaction (${saved}% smaller)`;
}

/** Children by the spawn call that made them; those no call of the timeline names are `unplaced`. */
export function childrenByCall(t: Pick<TurnTimeline, 'rounds' | 'children'>): {
  byCall: Map<string, TimelineChild[]>;
  unplaced: TimelineChild[];
} {
  const calls = new Set(t.rounds.flatMap((r) => r.toolCalls.map((c) => c.callId)));
  const byCall = new Map<string, TimelineChild[]>();
  const unplaced: TimelineChild[] = [];
  for (const child of t.children) {
    if (child.callId && calls.has(child.callId)) {
      byCall.set(child.callId, [...(byCall.get(child.callId) ?? []), child]);
    } else unplaced.push(child);
  }
  return { byCall, unplaced };
}

/**
 * What a call's wait is called: a person's approval, or the client's tool (docs/adr/0047), whose
 * result the client sends (answered, pending, expired, cancelled).
 */
export function waitLabel(approval: NonNullable<TimelineToolCall['approval']>): string {
  return approval.kind === 'client_tool' ? 'Client tool wait' : 'Approval wait';
}

/** How long an approval kept a call waiting: requested to decided (or to `now` while pending). */
export function approvalWaitMs(
  approval: NonNullable<TimelineToolCall['approval']>,
  now = Date.now(),
): number {
  const end = approval.decidedAt ? Date.parse(approval.decidedAt) : now;
  return Math.max(0, end - Date.parse(approval.requestedAt));
}

export type RowKind = 'queue' | 'run' | 'round' | 'attempt' | 'tool' | 'approval' | 'child' | 'hook';

export interface WaterfallRow {
  key: string;
  kind: RowKind;
  /** Nesting: 0 the turn's phases, 1 rounds/children/hooks, 2 attempts/calls, 3 waits and spawned children. */
  depth: number;
  label: string;
  status?: string;
  /** Since admission; null when the part has no recorded start. */
  startMs: number | null;
  durationMs: number | null;
  /** Whether it had not ended when the timeline was read (its bar runs to the timeline's end). */
  open: boolean;
  /** Left edge and width as percentages of the span (0–100); width at least MIN_WIDTH when drawn. */
  offsetPct: number;
  widthPct: number;
  /** The bar said in words, for screen readers (the bar itself is decoration). */
  description: string;
}

export interface Waterfall {
  /** Admission to the last thing the timeline knows (or `now` while the turn runs). */
  spanMs: number;
  rows: WaterfallRow[];
}

/** The narrowest bar drawn, in percent, so an instant still shows. */
export const MIN_WIDTH = 0.6;

interface Part {
  key: string;
  kind: RowKind;
  depth: number;
  label: string;
  status?: string;
  from: string | null;
  to: string | null;
}

const at = (v: string | null | undefined): number | null => {
  if (!v) return null;
  const n = Date.parse(v);
  return Number.isNaN(n) ? null : n;
};

/**
 * The timeline as waterfall rows, in story order: queue wait and run; each round with its attempts
 * and tool calls (an approval wait under its call, the children a call spawned under it); children
 * no call names; post-turn hooks. A part still running is drawn to the span's end (`now` while the
 * turn has not ended).
 */
export function waterfall(t: TurnTimeline, now = Date.now()): Waterfall {
  const { byCall, unplaced } = childrenByCall(t);
  const ended = isEnded(t.turn.status);
  const parts: Part[] = [];
  const p = t.phases;
  parts.push({
    key: 'queue',
    kind: 'queue',
    depth: 0,
    label: 'Queue wait',
    from: p.admittedAt,
    to: p.claimedAt ?? (ended ? p.endedAt : null),
  });
  if (p.claimedAt)
    parts.push({
      key: 'run',
      kind: 'run',
      depth: 0,
      label: 'Run',
      status: t.turn.status,
      from: p.claimedAt,
      to: p.endedAt,
    });
  const child = (c: TimelineChild, depth: number): Part => ({
    key: `child-${c.taskId}`,
    kind: 'child',
    depth,
    label: `Child turn: ${c.agent}`,
    status: c.childTurnStatus ?? c.taskStatus,
    from: c.createdAt,
    to: c.completedAt,
  });
  for (const r of t.rounds) {
    const n = r.index + 1;
    parts.push({
      key: `round-${r.index}`,
      kind: 'round',
      depth: 1,
      label: `Round ${n}${r.model ? `: ${r.model}` : ''}`,
      from: r.startedAt,
      to: r.endedAt,
    });
    r.attempts.forEach((a, i) => {
      const kind = attemptKind(r.attempts, i);
      parts.push({
        key: `round-${r.index}-attempt-${i}`,
        kind: 'attempt',
        depth: 2,
        label: `Attempt ${a.attempt}${kind === 'first' ? '' : ` (${kind})`}: ${a.model}`,
        status: a.outcome,
        from: a.startedAt,
        to: a.completedAt,
      });
    });
    for (const c of r.toolCalls) {
      parts.push({
        key: `call-${c.callId}`,
        kind: 'tool',
        depth: 2,
        label: `Tool call: ${c.name}`,
        status: c.outcome,
        from: c.startedAt ?? c.approval?.requestedAt ?? null,
        to: c.completedAt,
      });
      if (c.approval)
        parts.push({
          key: `call-${c.callId}-approval`,
          kind: 'approval',
          depth: 3,
          label: `${waitLabel(c.approval)}: ${c.name}`,
          status: c.approval.status,
          from: c.approval.requestedAt,
          to: c.approval.decidedAt,
        });
      for (const ch of byCall.get(c.callId) ?? []) parts.push(child(ch, 3));
    }
  }
  for (const ch of unplaced) parts.push(child(ch, 1));
  t.hooks.forEach((h, i) =>
    parts.push({
      key: `hook-${i}`,
      kind: 'hook',
      depth: 1,
      label: `Post-turn hook: ${h.hook}`,
      status: h.status,
      from: h.createdAt,
      to: h.completedAt,
    }),
  );

  const origin = at(p.admittedAt) ?? now;
  const known = parts.flatMap((x) => [at(x.from), at(x.to)]).filter((v): v is number => v !== null);
  const last = Math.max(origin, ...known, ended ? origin : now);
  const spanMs = Math.max(1, last - origin);
  const rows = parts.map((x): WaterfallRow => {
    const from = at(x.from);
    const open = from !== null && at(x.to) === null;
    const to = at(x.to) ?? (from !== null ? last : null);
    const startMs = from === null ? null : Math.max(0, from - origin);
    const durationMs = from === null || to === null ? null : Math.max(0, to - from);
    const offsetPct = startMs === null ? 0 : clamp((startMs / spanMs) * 100, 0, 100 - MIN_WIDTH);
    const widthPct = durationMs === null ? 0 : clamp((durationMs / spanMs) * 100, MIN_WIDTH, 100 - offsetPct);
    return {
      key: x.key,
      kind: x.kind,
      depth: x.depth,
      label: x.label,
      status: x.status,
      startMs,
      durationMs,
      open,
      offsetPct: round2(offsetPct),
      widthPct: round2(widthPct),
      description: describe(x, startMs, durationMs, open),
    };
  });
  return { spanMs, rows };
}

function describe(x: Part, startMs: number | null, durationMs: number | null, open: boolean): string {
  const status = x.status ? `, ${x.status.replaceAll('_', ' ')}` : '';
  if (startMs === null) return `${x.label}${status}: no start recorded`;
  const lasts = open ? `running for ${formatMs(durationMs)} so far` : `lasted ${formatMs(durationMs)}`;
  return `${x.label}${status}: started ${formatMs(startMs)} after admission, ${lasts}`;
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));
const round2 = (v: number) => Math.round(v * 100) / 100;

/** Each part of a round's context as a share of its total tokens (percent, rounded). */
export function tokenShares(tokens: RoundContext['tokens']): { part: string; tokens: number; pct: number }[] {
  const total = Math.max(1, tokens.total);
  return (['system', 'tools', 'messages'] as const).map((part) => ({
    part,
    tokens: tokens[part],
    pct: Math.round((tokens[part] / total) * 100),
  }));
}

/** Where a context message came from, as the viewer names it. */
export const SOURCE_LABEL: Record<string, string> = {
  transcript: 'transcript',
  recall: 'recalled memory',
  work_items: 'work items',
  summary: 'compaction summary',
  other: 'other',
};

/** A message's content as JSON when it is a JSON object or array (tool results often are), else null. */
export function asJson(content: string): unknown {
  const s = content.trim();
  if (!(s.startsWith('{') || s.startsWith('['))) return null;
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return null;
  }
}
