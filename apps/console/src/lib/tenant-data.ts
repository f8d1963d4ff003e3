/**
 * The operator's tenant-data view (docs/adr/0068, 0067): reading an export archive as it streams,
 * the retention field, and a deletion's receipt as a person reads it.
 */

/** What has been read of an export archive (JSONL, docs/TENANT-DATA.md) so far. */
export interface ExportProgress {
  /** Rows received so far, in all. */
  rows: number;
  /** Rows received per table, in the order the tables arrived. */
  tables: Record<string, number>;
  /** The archive's `manifest` line, once read. */
  manifest: { tenantId?: string; exportedAt?: string; tables?: { name: string }[] } | null;
  /** The `end` line's counts: the archive is complete once they are here. */
  end: Record<string, number> | null;
  /** The last checkpoint's cursor (`?after=` resumes there). */
  cursor: string | null;
}

/**
 * Reads an export archive chunk by chunk (a line may be split across chunks). A line that is not
 * JSON, or not an object with a `kind`, is an error: the download is not the archive.
 */
export class ExportReader {
  private rest = '';
  readonly progress: ExportProgress = { rows: 0, tables: {}, manifest: null, end: null, cursor: null };

  feed(chunk: string): ExportProgress {
    const lines = (this.rest + chunk).split('\n');
    this.rest = lines.pop() ?? '';
    for (const line of lines) this.line(line);
    return this.progress;
  }

  /** The last line (an archive ends with a newline; one without is read all the same). */
  finish(): ExportProgress {
    if (this.rest.trim() !== '') this.line(this.rest);
    this.rest = '';
    return this.progress;
  }

  private line(text: string) {
    if (text.trim() === '') return;
    let entry: { kind?: unknown; table?: unknown; cursor?: unknown; counts?: unknown };
    try {
      entry = JSON.parse(text) as typeof entry;
    } catch {
      throw new Error(`The archive has a line that is not JSON: ${text.slice(0, 80)}`);
    }
    const p = this.progress;
    switch (entry?.kind) {
      case 'manifest':
        p.manifest = entry as ExportProgress['manifest'];
        return;
      case 'row': {
        const table = String(entry.table);
        p.tables[table] = (p.tables[table] ?? 0) + 1;
        p.rows++;
        return;
      }
      case 'checkpoint':
        p.cursor = typeof entry.cursor === 'string' ? entry.cursor : p.cursor;
        return;
      case 'end':
        p.end = (entry.counts ?? {}) as Record<string, number>;
        return;
      default:
        throw new Error(`The archive has a line of no known kind: ${text.slice(0, 80)}`);
    }
  }
}

/** The file name of a tenant's archive: its name made safe for a file, and the day. */
export function exportFileName(tenantName: string, at: Date): string {
  const safe = tenantName.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'tenant';
  return `${safe}-export-${at.toISOString().slice(0, 10)}.jsonl`;
}

/**
 * The retention field: empty keeps transcripts for ever (`null`); otherwise a number, sent as typed
 * so the API's own validation (a whole number of days, 1..3650) answers a wrong one with its message.
 */
export function parseRetention(
  text: string,
): { ok: true; value: number | null } | { ok: false; error: string } {
  const t = text.trim();
  if (t === '') return { ok: true, value: null };
  const n = Number(t);
  if (!Number.isFinite(n)) return { ok: false, error: 'Transcript retention: a number of days, or empty' };
  return { ok: true, value: n };
}

/** A deletion's (or a receipt's) counts: the tables that had rows, most first, and the total. */
export function countLines(counts: Record<string, number> | null | undefined): {
  total: number;
  tables: [string, number][];
} {
  const tables = Object.entries(counts ?? {})
    .filter(([, n]) => typeof n === 'number' && n > 0)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return { total: tables.reduce((sum, [, n]) => sum + n, 0), tables };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/**
 * One sentence for the audit entries of tenant data (export, deletion receipt, retention, data-key
 * rotation), above their detail lines; null for the other actions.
 */
export function auditSummary(action: string, details: Record<string, unknown>): string | null {
  switch (action) {
    case 'tenant.deleted': {
      const { total, tables } = countLines(details.counts as Record<string, number>);
      const name = typeof details.tenantName === 'string' ? `${details.tenantName}: ` : '';
      return (
        `${name}${plural(total, 'row')} deleted from ${plural(tables.length, 'table')}, ` +
        `${plural(num(details.redisKeys), 'Redis key')}, ${plural(num(details.jobs), 'queued job')}, ` +
        `${plural(num(details.originals), 'stored original')}; ` +
        (details.keyDestroyed ? 'data key destroyed first.' : 'no data key to destroy.')
      );
    }
    case 'tenant.exported': {
      const { total, tables } = countLines(details.tables as Record<string, number>);
      return `${plural(total, 'row')} from ${plural(tables.length, 'table')} exported${details.resumed ? ' (a resumed export)' : ''}.`;
    }
    case 'tenant.retention_purged':
      return (
        `Content of ${plural(num(details.sessions), 'session')} older than ${plural(num(details.retentionDays), 'day')} purged: ` +
        `${plural(num(details.messages), 'message')}, ${plural(num(details.toolCalls), 'tool call')}, ` +
        `${plural(num(details.originals), 'original')}, ${plural(num(details.events), 'event')}.`
      );
    case 'tenant.data_key_rotated':
      if (details.kind === 'kek') {
        const versions = Array.isArray(details.versions) ? details.versions.length : 0;
        return `${plural(versions, 'data-key version')} re-wrapped under key-encryption key ${String(details.kekId)}.`;
      }
      return details.previous === null || details.previous === undefined
        ? `Data key version ${num(details.version)} created.`
        : `Data key rotated: version ${num(details.version)} active, version ${num(details.previous)} retired.`;
    default:
      return null;
  }
}
