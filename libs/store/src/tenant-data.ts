import type pg from 'pg';
import { newId } from '@switchboard/contracts';
import { auditDetails } from './audit-log';
import { HOLDS_SESSION_STATUSES } from './turn/statuses';

/**
 * A tenant's data as a whole (docs/adr/0068): the tables that hold it, found in the catalog (so a
 * table added later is never forgotten), its export as JSONL, its import into another database, its
 * deletion in bounded batches and the purge of old transcripts.
 *
 * A table is the tenant's when it has a `tenant_id` column (partitioned parents: the parent, which
 * covers every partition; a detached partition is a table of its own), plus `tenants` itself, plus
 * every table without `tenant_id` that has a foreign key to one of those (its rows are the tenant's
 * through their parent: memory_block_versions, experiment_runs). Identifiers in the statements below
 * come from the catalog only, quoted; values are always parameters.
 */

export interface TenantTable {
  name: string;
  /** Primary key columns, in key order, and their SQL types. */
  key: string[];
  keyTypes: string[];
  /** Columns written on import (generated ones are derived). */
  columns: string[];
  /** Columns exported as text so that no precision is lost in JSON (numeric, bigint). */
  textColumns: string[];
  /** Generated columns: left out of the export. */
  generated: string[];
  /** How a row is the tenant's. */
  via:
    | { kind: 'tenant' }
    | { kind: 'self' }
    | { kind: 'parent'; parent: string; columns: string[]; parentColumns: string[] };
  /** Tables this one references (foreign keys), among the tenant's tables. */
  references: string[];
}

const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

interface ColumnRow {
  table: string;
  column: string;
  type: string;
  generated: boolean;
  keyPos: number | null;
}

/**
 * Every table holding rows of a tenant, parents before the tables that reference them (the order an
 * import inserts in; a deletion goes the other way). `tenants` is first.
 */
export async function tenantTables(pool: pg.Pool): Promise<TenantTable[]> {
  const { rows: cols } = await pool.query<ColumnRow>(`
    SELECT c.relname AS "table", a.attname AS "column", format_type(a.atttypid, a.atttypmod) AS type,
      a.attgenerated <> '' AS generated,
      array_position(i.indkey::int2[], a.attnum) AS "keyPos"
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      AND c.relname NOT IN ('_prisma_migrations', 'tenant_deletions')
    ORDER BY c.relname, a.attnum`);
  const { rows: fks } = await pool.query<{
    table: string;
    parent: string;
    columns: string[];
    parentColumns: string[];
  }>(`
    SELECT c.relname AS "table", p.relname AS parent,
      ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(n, o)
            JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.o) AS columns,
      ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY u(n, o)
            JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.o) AS "parentColumns"
    FROM pg_constraint k
    JOIN pg_class c ON c.oid = k.conrelid
    JOIN pg_class p ON p.oid = k.confrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE k.contype = 'f' AND k.conparentid = 0 AND n.nspname = current_schema()
    ORDER BY c.relname, k.conname`);

  const byTable = new Map<string, ColumnRow[]>();
  for (const c of cols) byTable.set(c.table, [...(byTable.get(c.table) ?? []), c]);
  const owned = new Set(
    [...byTable].filter(([, cs]) => cs.some((c) => c.column === 'tenant_id')).map(([t]) => t),
  );
  const tables = new Map<string, TenantTable>();
  const make = (name: string, via: TenantTable['via']): TenantTable => {
    const cs = byTable.get(name) ?? [];
    const key = cs.filter((c) => c.keyPos !== null).sort((a, b) => a.keyPos! - b.keyPos!);
    if (key.length === 0) throw new Error(`table ${name} holds tenant data but has no primary key`);
    return {
      name,
      key: key.map((c) => c.column),
      keyTypes: key.map((c) => c.type),
      columns: cs.filter((c) => !c.generated).map((c) => c.column),
      textColumns: cs
        .filter((c) => !c.generated && (/^numeric/.test(c.type) || c.type === 'bigint'))
        .map((c) => c.column),
      generated: cs.filter((c) => c.generated).map((c) => c.column),
      via,
      references: [],
    };
  };
  if (byTable.has('tenants')) tables.set('tenants', make('tenants', { kind: 'self' }));
  for (const name of owned) tables.set(name, make(name, { kind: 'tenant' }));
  for (const fk of fks) {
    if (tables.has(fk.table) || !byTable.has(fk.table) || !owned.has(fk.parent)) continue;
    tables.set(
      fk.table,
      make(fk.table, {
        kind: 'parent',
        parent: fk.parent,
        columns: fk.columns,
        parentColumns: fk.parentColumns,
      }),
    );
  }
  for (const fk of fks) {
    const t = tables.get(fk.table);
    if (t && tables.has(fk.parent) && fk.parent !== fk.table && !t.references.includes(fk.parent)) {
      t.references.push(fk.parent);
    }
  }
  // Parents first (Kahn's algorithm, ties by name); `tenants` before everything.
  const order: TenantTable[] = [];
  const done = new Set<string>();
  const pending = [...tables.values()].sort((a, b) =>
    a.name === 'tenants' ? -1 : b.name === 'tenants' ? 1 : a.name.localeCompare(b.name),
  );
  while (pending.length > 0) {
    const i = pending.findIndex((t) => t.references.every((r) => done.has(r) || r === t.name));
    // A cycle (none today) is broken by taking the first left.
    const [next] = pending.splice(i === -1 ? 0 : i, 1);
    order.push(next);
    done.add(next.name);
  }
  return order;
}

/** `WHERE` of a table's rows of the tenant ($1), over alias `r`. */
export function ownRows(t: TenantTable): string {
  switch (t.via.kind) {
    case 'self':
      return 'r.id = $1::uuid';
    case 'tenant':
      return 'r.tenant_id = $1::uuid';
    case 'parent': {
      const { parent, columns, parentColumns } = t.via;
      const join = columns.map((c, i) => `p.${ident(parentColumns[i])} = r.${ident(c)}`).join(' AND ');
      return `EXISTS (SELECT 1 FROM ${ident(parent)} p WHERE ${join} AND p.tenant_id = $1::uuid)`;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Export

export const EXPORT_FORMAT = 'switchboard-tenant-export';
export const EXPORT_VERSION = 1;

/** Where an export resumes: after this row (key values as text) of this table. */
export interface ExportCursor {
  table: string;
  key: string[];
}

export class BadExportCursor extends Error {}

export const encodeExportCursor = (c: ExportCursor): string =>
  Buffer.from(JSON.stringify([c.table, c.key])).toString('base64url');

/** The cursor, checked against the tables and their key types; BadExportCursor when it is not one. */
export async function decodeExportCursor(
  pool: pg.Pool,
  tables: TenantTable[],
  text: string,
): Promise<ExportCursor> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw new BadExportCursor('the cursor is not one an export gave');
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 2 ||
    typeof parsed[0] !== 'string' ||
    !Array.isArray(parsed[1]) ||
    !parsed[1].every((k) => typeof k === 'string')
  ) {
    throw new BadExportCursor('the cursor is not one an export gave');
  }
  const table = tables.find((t) => t.name === parsed[0]);
  const key = parsed[1];
  if (!table || key.length !== table.key.length)
    throw new BadExportCursor('the cursor names no table of the export');
  try {
    await pool.query(`SELECT ${table.keyTypes.map((type, i) => `$${i + 1}::${type}`).join(', ')}`, key);
  } catch {
    throw new BadExportCursor('the cursor’s key does not fit its table');
  }
  return { table: table.name, key };
}

export interface ExportOptions {
  /** Resume after this row. */
  after?: ExportCursor;
  /** Applied to every column value (decryption, docs/adr/0067); identity by default. */
  open?: (tenantId: string, value: unknown) => Promise<unknown>;
  /** Rows per statement (keyset pages). */
  pageSize?: number;
  /** Called once the last line is produced, with the rows per table. */
  onComplete?: (counts: Record<string, number>) => Promise<void>;
}

/**
 * The tenant's archive as JSONL lines (docs/adr/0068): a manifest, then per table its rows in key
 * order with a checkpoint (a cursor to resume after) after every page, then `end` with the counts.
 * One keyset page per statement, pulled only as fast as the consumer reads: never a whole table.
 */
export async function* exportTenant(
  pool: pg.Pool,
  tenantId: string,
  tables: TenantTable[],
  options: ExportOptions = {},
): AsyncGenerator<string> {
  const pageSize = options.pageSize ?? 500;
  const open = options.open;
  const start = options.after ? tables.findIndex((t) => t.name === options.after!.table) : 0;
  yield `${JSON.stringify({
    kind: 'manifest',
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    tenantId,
    exportedAt: new Date().toISOString(),
    after: options.after ? encodeExportCursor(options.after) : null,
    tables: tables.map((t) => ({ name: t.name, key: t.key })),
  })}\n`;
  const counts: Record<string, number> = {};
  for (let i = Math.max(start, 0); i < tables.length; i++) {
    const t = tables[i];
    counts[t.name] = 0;
    let after = options.after && i === start ? options.after.key : null;
    const keyList = t.key.map((k) => `r.${ident(k)}`).join(', ');
    const text = t.textColumns.map((c) => `'${c}', r.${ident(c)}::text`).join(', ');
    const row =
      `to_jsonb(r)` +
      (t.generated.length ? ` - ARRAY[${t.generated.map((g) => `'${g}'`).join(', ')}]::text[]` : '') +
      (text ? ` || jsonb_build_object(${text})` : '');
    const keyText = t.key.map((k, n) => `r.${ident(k)}::text AS k${n}`).join(', ');
    for (;;) {
      const params: unknown[] = [tenantId];
      let keyset = '';
      if (after) {
        keyset = ` AND (${keyList}) > (${t.keyTypes.map((type, n) => `$${n + 2}::${type}`).join(', ')})`;
        params.push(...after);
      }
      const { rows } = await pool.query<Record<string, string>>(
        `SELECT (${row})::text AS j, ${keyText} FROM ${ident(t.name)} r
         WHERE ${ownRows(t)}${keyset} ORDER BY ${keyList} LIMIT ${pageSize}`,
        params,
      );
      if (rows.length === 0) break;
      let chunk = '';
      for (const r of rows) {
        let json = r.j;
        if (open) {
          const value = JSON.parse(json) as Record<string, unknown>;
          for (const [k, v] of Object.entries(value)) value[k] = await open(tenantId, v);
          json = JSON.stringify(value);
        }
        chunk += `{"kind":"row","table":${JSON.stringify(t.name)},"row":${json}}\n`;
      }
      counts[t.name] += rows.length;
      const last = rows[rows.length - 1];
      after = t.key.map((_, n) => last[`k${n}`]);
      chunk += `${JSON.stringify({ kind: 'checkpoint', cursor: encodeExportCursor({ table: t.name, key: after }) })}\n`;
      yield chunk;
      if (rows.length < pageSize) break;
    }
  }
  await options.onComplete?.(counts);
  yield `${JSON.stringify({ kind: 'end', counts })}\n`;
}

// ---------------------------------------------------------------------------------------------
// Import

export class BadArchive extends Error {}

/** The archive may not go in as asked (encryption it names that this deployment cannot give). */
export class ImportRefused extends Error {}

/**
 * Content sealed on import (docs/adr/0067, 0068) with the tenant's first data key, made in the import's
 * transaction: what the live writers would have stored. Synchronous once made (the key is in hand).
 */
export interface ImportSealer {
  strict: boolean;
  sealText(text: string): string;
  sealJson(value: unknown): string;
}

/**
 * How content is stored on import, decided once from the archive's `tenants` row (its settings name
 * the encryption mode; the row is not committed yet, so the database cannot be asked): a sealer, or
 * undefined to store it as exported. `client` is the import's own (its transaction), for the data key.
 */
export type ImportSealing = (
  tenantId: string,
  settings: unknown,
  client: pg.PoolClient,
) => Promise<ImportSealer | undefined>;

export type ImportMode = 'plain' | 'sealed' | 'strict';

export interface ImportOptions {
  /** Rows per INSERT. */
  batch?: number;
  sealing?: ImportSealing;
}

type Row = Record<string, unknown>;

const SEALED_PREFIX = 'sbe1.';

/**
 * How a content column is stored by the live writers (docs/adr/0067's list): `t` a text column sealed
 * as text, `j` a JSON column sealed whole, `events` the journal's content fields one by one (and the
 * content of a few event types: a decision's reason, a cancel's note), `body` / `hints` / `metadata`
 * the body inside a JSON value, `task_input` / `handback` a sub-agent task's content fields one by one
 * (status and ids plain), `text_fields:<a,b>` the named fields of a JSON object sealed as text,
 * `audit` the content an audit entry copies (a decision's reason, a cancel's note).
 */
type SealKind =
  | 't'
  | 'j'
  | 'events'
  | 'body'
  | 'hints'
  | 'metadata'
  | 'task_input'
  | 'handback'
  | 'text_fields:comment'
  | 'audit';

/** The content columns of each table as the live writers store them, and how each is sealed. */
const SEALED_COLUMNS: Record<string, [string, SealKind][]> = {
  messages: [
    ['body', 'j'],
    ['tool_calls', 'j'],
    ['metadata', 'metadata'],
  ],
  tool_calls: [
    ['arguments', 'j'],
    ['result', 'j'],
    ['error', 'j'],
  ],
  // A cancel's note: ControlStore.requestCancel and the checkpoint that ends a cancelled turn.
  turns: [
    ['final_text', 't'],
    ['cancel_note', 't'],
  ],
  events: [['data', 'events']],
  context_parts: [['content', 'j']],
  tool_result_originals: [['content', 't']],
  memory_records: [
    ['title', 't'],
    ['content', 't'],
  ],
  memory_blocks: [['content', 't']],
  memory_block_versions: [['content', 't']],
  trigger_deliveries: [['payload', 'body']],
  wake_hints: [['hints', 'hints']],
  agent_reflections: [['text', 't']],
  agent_user_profiles: [['content', 't']],
  // The calls a wait asks about (sealCheckpoint), a person's reason (ApprovalStore.decide; not the
  // fixed text the system writes, see sealImportedRow) and a client tool's answer (ClientToolStore).
  approvals: [
    ['arguments', 'j'],
    ['reason', 't'],
    ['output', 't'],
  ],
  // A sub-agent's task: its prompt, context and answers (TaskService), its handback and output.
  tasks: [
    ['input', 'task_input'],
    ['handback', 'handback'],
    ['output', 't'],
  ],
  // DatasetStore.addItems.
  dataset_items: [
    ['input', 't'],
    ['expected', 't'],
    ['rubric', 't'],
  ],
  // Every scorer's reason (the scoring hook) and a feedback's comment (writeFeedback).
  turn_scores: [
    ['reason', 't'],
    ['details', 'text_fields:comment'],
  ],
  audit_events: [['details', 'audit']],
};

/** The journal's content fields (libs/database's CONTENT_EVENT_FIELDS; the store does not import it here). */
const EVENT_FIELDS = ['text', 'arguments', 'handback', 'finalText', 'output', 'content', 'question'];

/** Content fields of particular events, sealed as text by their writers (ApprovalStore, ControlStore). */
const EVENT_TEXT_FIELDS: Record<string, string[]> = {
  approval_decided: ['reason'],
  turn_cancelled: ['note'],
};

/** Content fields of particular audit entries, sealed as text by their writers (the same two). */
const AUDIT_TEXT_FIELDS: Record<string, string[]> = {
  'approval.decided': ['reason'],
  'turn.cancelled': ['note'],
};

/** A handback's content fields (checkpoint-seal.ts `sealHandback`): text sealed as text, the rest as JSON. */
const HANDBACK_FIELDS = ['result', 'partial', 'question', 'options'];

const isSealedString = (v: unknown) => typeof v === 'string' && v.startsWith(SEALED_PREFIX);
const isObject = (v: unknown): v is Row => !!v && typeof v === 'object' && !Array.isArray(v);
const open = (v: unknown) => v !== null && v !== undefined && !isSealedString(v);

/** `value` with the named string fields sealed as text (the others as they are). */
function sealTextFields(value: Row, fields: readonly string[], s: ImportSealer): Row {
  let out: Row | undefined;
  for (const f of fields) {
    const v = value[f];
    if (typeof v !== 'string' || v === '' || isSealedString(v)) continue;
    out ??= { ...value };
    out[f] = s.sealText(v);
  }
  return out ?? value;
}

/** Wake hints with each one's body sealed (wake.ts `sealedHint`). */
function sealHints(hints: unknown, s: ImportSealer): unknown {
  if (!Array.isArray(hints)) return hints;
  return hints.map((h: unknown) => {
    if (!h || typeof h !== 'object') return h;
    const body = (h as Row).body;
    return body === null || body === undefined || isSealedString(body)
      ? h
      : { ...(h as Row), body: s.sealJson(body) };
  });
}

/** A row of `table` with its content sealed as the live writers seal it; the same row when none. */
export function sealImportedRow(table: string, row: Row, s: ImportSealer): Row {
  const columns = SEALED_COLUMNS[table];
  if (!columns) return row;
  const out: Row = { ...row };
  for (const [column, kind] of columns) {
    const v = out[column];
    if (!open(v)) continue;
    switch (kind) {
      case 't':
        // An empty text is stored as is (TenantCipher.sealText); so is the fixed reason the system
        // writes on a cancelled turn's pending approvals (ControlStore), not a person's words.
        if (v === '') break;
        if (table === 'approvals' && column === 'reason' && out.decided_by === 'system') break;
        out[column] = typeof v === 'string' ? s.sealText(v) : v;
        break;
      case 'j':
        out[column] = s.sealJson(v);
        break;
      case 'events':
        if (isObject(v)) {
          const data: Row = { ...v };
          for (const f of EVENT_FIELDS) if (open(data[f])) data[f] = s.sealJson(data[f]);
          const type = typeof out.type === 'string' ? out.type : '';
          out[column] = sealTextFields(data, EVENT_TEXT_FIELDS[type] ?? [], s);
        }
        break;
      case 'audit':
        if (isObject(v) && typeof out.action === 'string' && AUDIT_TEXT_FIELDS[out.action])
          out[column] = sealTextFields(v, AUDIT_TEXT_FIELDS[out.action], s);
        break;
      case 'text_fields:comment':
        if (isObject(v)) out[column] = sealTextFields(v, ['comment'], s);
        break;
      case 'task_input':
        if (isObject(v)) {
          const input = sealTextFields(v, ['task', 'context'], s);
          out[column] = isObject(input.answers)
            ? { ...input, answers: sealTextFields(input.answers, Object.keys(input.answers), s) }
            : input;
        }
        break;
      case 'handback':
        if (isObject(v)) {
          const handback: Row = { ...v };
          for (const f of HANDBACK_FIELDS) {
            const field = handback[f];
            if (!open(field)) continue;
            if (field === '') continue;
            handback[f] = typeof field === 'string' ? s.sealText(field) : s.sealJson(field);
          }
          out[column] = handback;
        }
        break;
      case 'body':
        if (isObject(v) && 'body' in v && open(v.body)) out[column] = { ...v, body: s.sealJson(v.body) };
        break;
      case 'hints':
        out[column] = sealHints(v, s);
        break;
      case 'metadata': {
        // A wake tick's copy of the hints (wake.ts): the same bodies, sealed.
        const wake = (v as Row).wakeHints as Row | undefined;
        if (wake && typeof wake === 'object' && Array.isArray(wake.hints))
          out[column] = { ...(v as Row), wakeHints: { ...wake, hints: sealHints(wake.hints, s) } };
        break;
      }
    }
  }
  // Strict: no full-text index derived from content (docs/adr/0067): the tsvector written empty.
  if (s.strict && table === 'memory_records' && 'search' in out) out.search = '';
  return out;
}

/**
 * Loads an archive's lines into this database (an empty, migrated one) in one transaction: all of it
 * or nothing, with triggers off (session_replication_role = replica). Rows after the last checkpoint of an interrupted archive followed by its resumed part
 * must have been cut by the client (docs/adr/0068); an archive without its `end` line is refused.
 */
export async function importTenant(
  pool: pg.Pool,
  lines: AsyncIterable<string>,
  options: ImportOptions = {},
): Promise<{ tenantId: string; counts: Record<string, number>; mode: ImportMode }> {
  const batch = options.batch ?? 500;
  // Taken before any await: a readline interface read to its end before it is iterated loses its lines.
  const iterator = lines[Symbol.asyncIterator]();
  const input: AsyncIterable<string> = { [Symbol.asyncIterator]: () => iterator };
  const tables = new Map((await tenantTables(pool)).map((t) => [t.name, t]));
  const client = await pool.connect();
  let tenantId: string | undefined;
  const counts: Record<string, number> = {};
  let pending: { table: string; rows: unknown[] } | undefined;
  let decided = false;
  let sealer: ImportSealer | undefined;
  const flush = async () => {
    if (!pending || pending.rows.length === 0) return;
    const t = tables.get(pending.table)!;
    if (sealer) pending.rows = pending.rows.map((r) => sealImportedRow(t.name, r as Row, sealer!));
    const cols = t.columns.map(ident).join(', ');
    await client.query(
      `INSERT INTO ${ident(t.name)} (${cols}) SELECT ${cols} FROM jsonb_populate_recordset(NULL::${ident(t.name)}, $1::jsonb)`,
      [JSON.stringify(pending.rows)],
    );
    counts[t.name] = (counts[t.name] ?? 0) + pending.rows.length;
    pending = undefined;
  };
  let ended = false;
  try {
    await client.query('BEGIN');
    // The rows as they were: no trigger derives rows of its own from them (agents' first version is
    // in the archive already), as pg_restore loads data. Needs a role that may set it (a superuser,
    // or one granted SET on the parameter, Postgres 15+).
    await client.query("SET LOCAL session_replication_role = 'replica'");
    let n = 0;
    for await (const raw of input) {
      n++;
      const line = raw.trim();
      if (!line) continue;
      let entry: { kind?: string; table?: string; row?: unknown; tenantId?: string; format?: string };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        throw new BadArchive(`line ${n} is not JSON`);
      }
      if (entry.kind === 'manifest') {
        if (entry.format !== EXPORT_FORMAT) throw new BadArchive(`line ${n}: not a ${EXPORT_FORMAT} archive`);
        if (tenantId && entry.tenantId !== tenantId)
          throw new BadArchive(`line ${n}: another tenant's archive`);
        tenantId = entry.tenantId;
      } else if (entry.kind === 'row') {
        if (!tenantId) throw new BadArchive('the archive does not start with its manifest');
        if (!entry.table || !tables.has(entry.table))
          throw new BadArchive(`line ${n}: no table ${entry.table}`);
        // Data keys are this deployment's, never an archive's (the export leaves them out).
        if (entry.table === 'tenant_data_keys') continue;
        if (!decided) {
          // Decided on the first row: the `tenants` row comes first, and its settings name the mode.
          decided = true;
          const settings = entry.table === 'tenants' ? (entry.row as Row | undefined)?.settings : undefined;
          sealer = options.sealing ? await options.sealing(tenantId, settings, client) : undefined;
        }
        // Strict: no vectors derived from content (the embedding job embeds nothing for it either).
        if (sealer?.strict && entry.table === 'memory_embeddings') continue;
        if (pending && pending.table !== entry.table) await flush();
        pending ??= { table: entry.table, rows: [] };
        pending.rows.push(entry.row);
        if (pending.rows.length >= batch) await flush();
      } else if (entry.kind === 'end') {
        ended = true;
      } else if (entry.kind !== 'checkpoint') {
        throw new BadArchive(`line ${n}: unknown kind ${String(entry.kind)}`);
      }
    }
    await flush();
    if (!tenantId || !ended) throw new BadArchive('the archive is incomplete: no end line');
    await client.query('COMMIT');
    return { tenantId, counts, mode: sealer ? (sealer.strict ? 'strict' : 'sealed') : 'plain' };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

// ---------------------------------------------------------------------------------------------
// Deletion

export type DeletionStatus = 'queued' | 'running' | 'completed' | 'failed';
export type DeletionStage = 'keys' | 'pause' | 'redis' | 'rows' | 'done';

export interface TenantDeletionRow {
  id: string;
  tenantId: string;
  tenantName: string;
  status: DeletionStatus;
  stage: DeletionStage;
  counts: Record<string, number>;
  redisKeys: number;
  jobs: number;
  originals: number;
  keyDestroyed: boolean;
  error: string | null;
  requestedAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
}

const DELETION_COLUMNS = `id, deleted_tenant_id AS "tenantId", tenant_name AS "tenantName", status, stage,
  counts, redis_keys AS "redisKeys", jobs, originals, key_destroyed AS "keyDestroyed", error,
  requested_at AS "requestedAt", started_at AS "startedAt", completed_at AS "completedAt"`;

/**
 * The tenant's deletion: a new one (queued, with its `tenant.deletion_requested` entry), or the one
 * under way (`created` false). null: no such tenant.
 */
export async function requestTenantDeletion(
  pool: pg.Pool,
  tenantId: string,
  actor: string,
): Promise<{ deletion: TenantDeletionRow; created: boolean; revokedKeyHashes: string[] } | null> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows: tenant } = await client.query<{ name: string }>(
      'SELECT name FROM tenants WHERE id = $1::uuid FOR UPDATE',
      [tenantId],
    );
    // The tenant's keys stop working with the request, not with the last batch: revoked here, in
    // the request's transaction (the caller evicts them from every gateway's key cache).
    const { rows: keys } = await client.query<{ hash: string }>(
      `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE tenant_id = $1::uuid RETURNING hash`,
      [tenantId],
    );
    const revokedKeyHashes = keys.map((k) => k.hash);
    const { rows: open } = await client.query<TenantDeletionRow>(
      `SELECT ${DELETION_COLUMNS} FROM tenant_deletions
       WHERE deleted_tenant_id = $1::uuid AND status IN ('queued', 'running')`,
      [tenantId],
    );
    if (open.length > 0) {
      await client.query('COMMIT');
      return { deletion: open[0], created: false, revokedKeyHashes };
    }
    if (tenant.length === 0) {
      await client.query('COMMIT');
      return null;
    }
    const id = newId();
    const { rows } = await client.query<TenantDeletionRow>(
      `INSERT INTO tenant_deletions (id, deleted_tenant_id, tenant_name) VALUES ($1::uuid, $2::uuid, $3)
       RETURNING ${DELETION_COLUMNS}`,
      [id, tenantId, tenant[0].name],
    );
    await client.query(
      `INSERT INTO audit_events (id, tenant_id, actor, action, target_type, target_id, details)
       VALUES ($1::uuid, $2::uuid, $3, 'tenant.deletion_requested', 'tenant', $2, $4::jsonb)`,
      [newId(), tenantId, actor, JSON.stringify(auditDetails({ deletionId: id }))],
    );
    await client.query('COMMIT');
    return { deletion: rows[0], created: true, revokedKeyHashes };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

export async function findTenantDeletion(pool: pg.Pool, id: string): Promise<TenantDeletionRow | null> {
  const { rows } = await pool.query<TenantDeletionRow>(
    `SELECT ${DELETION_COLUMNS} FROM tenant_deletions WHERE id = $1::uuid`,
    [id],
  );
  return rows[0] ?? null;
}

/** Newest first (ids are time-ordered); `before`: the previous page's last id. limit + 1 rows. */
export async function tenantDeletionPage(
  pool: pg.Pool,
  before: string | undefined,
  limit: number,
): Promise<TenantDeletionRow[]> {
  const { rows } = await pool.query<TenantDeletionRow>(
    `SELECT ${DELETION_COLUMNS} FROM tenant_deletions
     WHERE ($1::uuid IS NULL OR id < $1::uuid) ORDER BY id DESC LIMIT $2::int`,
    [before ?? null, limit + 1],
  );
  return rows;
}

/** Moves the deletion to `stage` (and to running, with its start); other fields as given. */
export async function advanceDeletion(
  pool: pg.Pool,
  id: string,
  stage: DeletionStage,
  add: { redisKeys?: number; jobs?: number } = {},
): Promise<void> {
  await pool.query(
    `UPDATE tenant_deletions SET stage = $2, status = 'running', started_at = coalesce(started_at, now()),
       redis_keys = redis_keys + $3::int, jobs = jobs + $4::int, error = NULL
     WHERE id = $1::uuid`,
    [id, stage, add.redisKeys ?? 0, add.jobs ?? 0],
  );
}

/**
 * Crypto-shredding first (docs/adr/0067): the tenant's data keys, when this deployment has them, in
 * the transaction that moves the deletion on. The number of keys destroyed.
 */
export async function destroyTenantKeys(pool: pg.Pool, deletion: TenantDeletionRow): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ exists: boolean }>(
      `SELECT to_regclass('tenant_data_keys') IS NOT NULL AS exists`,
    );
    let n = 0;
    if (rows[0].exists) {
      const r = await client.query('DELETE FROM tenant_data_keys WHERE tenant_id = $1::uuid', [
        deletion.tenantId,
      ]);
      n = r.rowCount ?? 0;
    }
    await client.query(
      `UPDATE tenant_deletions SET stage = 'pause', status = 'running', started_at = coalesce(started_at, now()),
         key_destroyed = key_destroyed OR $2::boolean,
         counts = counts || jsonb_build_object('tenant_data_keys', coalesce((counts->>'tenant_data_keys')::int, 0) + $3::int)
       WHERE id = $1::uuid`,
      [deletion.id, n > 0, n],
    );
    await client.query('COMMIT');
    return n;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Admission of the tenant paused (its kill switch, docs/adr/0030): no new turn while its rows go. */
export async function pauseForDeletion(pool: pg.Pool, deletion: TenantDeletionRow): Promise<void> {
  await pool.query(
    `UPDATE tenants SET kill_switch = true, paused_at = coalesce(paused_at, now()),
       pause_reason = coalesce(pause_reason, 'deletion') WHERE id = $1::uuid`,
    [deletion.tenantId],
  );
  await advanceDeletion(pool, deletion.id, 'redis');
}

/** Ids of the tenant's objects that name Redis keys: sessions, API keys, triggers (paged). */
export async function* tenantKeyIds(pool: pg.Pool, tenantId: string, page = 5000): AsyncGenerator<string[]> {
  for (const table of ['sessions', 'api_keys', 'triggers']) {
    let after: string | null = null;
    for (;;) {
      const { rows }: { rows: { id: string }[] } = await pool.query<{ id: string }>(
        `SELECT id::text FROM ${ident(table)} WHERE tenant_id = $1::uuid AND ($2::uuid IS NULL OR id > $2::uuid)
         ORDER BY id LIMIT $3::int`,
        [tenantId, after, page],
      );
      if (rows.length === 0) break;
      yield rows.map((r) => r.id);
      after = rows[rows.length - 1].id;
      if (rows.length < page) break;
    }
  }
}

/**
 * One batch: at most `limit` of the tenant's rows of `table`, deleted in a short transaction with
 * the deletion's count, so the count is exact whatever stops the worker. The rows deleted.
 */
export async function deleteTenantBatch(
  pool: pg.Pool,
  deletion: TenantDeletionRow,
  table: TenantTable,
  limit: number,
): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const key = table.key.map((k) => ident(k)).join(', ');
    const rKey = table.key.map((k) => `r.${ident(k)}`).join(', ');
    const r = await client.query(
      `DELETE FROM ${ident(table.name)} WHERE (${key}) IN (
         SELECT ${rKey} FROM ${ident(table.name)} r WHERE ${ownRows(table)} LIMIT ${limit})`,
      [deletion.tenantId],
    );
    const n = r.rowCount ?? 0;
    if (n > 0) {
      await client.query(
        `UPDATE tenant_deletions SET counts = counts || jsonb_build_object($2::text, coalesce((counts->>$2)::int, 0) + $3::int),
           originals = originals + CASE WHEN $2 = 'tool_result_originals' THEN $3::int ELSE 0 END
         WHERE id = $1::uuid`,
        [deletion.id, table.name, n],
      );
    }
    await client.query('COMMIT');
    return n;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** The end: the receipt in the operator's audit log (`tenant.deleted`) with the deletion completed. */
export async function completeDeletion(
  pool: pg.Pool,
  deletionId: string,
  actor: string,
): Promise<TenantDeletionRow> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<TenantDeletionRow>(
      `UPDATE tenant_deletions SET status = 'completed', stage = 'done', completed_at = now(), error = NULL
       WHERE id = $1::uuid AND status <> 'completed' RETURNING ${DELETION_COLUMNS}`,
      [deletionId],
    );
    const d = rows[0];
    if (d) {
      await client.query(
        `INSERT INTO audit_events (id, tenant_id, actor, action, target_type, target_id, details)
         VALUES ($1::uuid, NULL, $2, 'tenant.deleted', 'tenant', $3, $4::jsonb)`,
        [
          newId(),
          actor,
          d.tenantId,
          JSON.stringify(
            auditDetails({
              deletionId: d.id,
              tenantName: d.tenantName,
              counts: d.counts,
              redisKeys: d.redisKeys,
              jobs: d.jobs,
              originals: d.originals,
              keyDestroyed: d.keyDestroyed,
              startedAt: d.startedAt?.toISOString() ?? null,
              completedAt: d.completedAt?.toISOString() ?? null,
            }),
          ),
        ],
      );
    }
    await client.query('COMMIT');
    return d ?? (await findTenantDeletion(pool, deletionId))!;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

export async function failDeletion(pool: pg.Pool, deletionId: string, error: string): Promise<void> {
  await pool.query(`UPDATE tenant_deletions SET status = 'failed', error = $2 WHERE id = $1::uuid`, [
    deletionId,
    error.slice(0, 2000),
  ]);
}

/** Rows of the tenant left in any table, by table (every table and partition with a tenant_id). */
export async function tenantRowsLeft(pool: pg.Pool, tenantId: string): Promise<Record<string, number>> {
  const { rows: names } = await pool.query<{ name: string }>(`
    SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
    WHERE n.nspname = current_schema() AND c.relkind = 'r' ORDER BY 1`);
  const left: Record<string, number> = {};
  for (const { name } of names) {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ONLY ${ident(name)} WHERE tenant_id = $1::uuid`,
      [tenantId],
    );
    if (rows[0].n > 0) left[name] = rows[0].n;
  }
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM tenants WHERE id = $1::uuid',
    [tenantId],
  );
  if (rows[0].n > 0) left.tenants = rows[0].n;
  return left;
}

// ---------------------------------------------------------------------------------------------
// Retention

export interface RetentionResult {
  tenants: number;
  sessions: number;
  messages: number;
  toolCalls: number;
  originals: number;
  events: number;
}

/**
 * Transcript retention (docs/adr/0068): for each tenant with `transcriptRetentionDays`, the content of
 * its sessions idle longer than that (no turn holding them, no message or turn since) is purged, one
 * session per short transaction: messages deleted, tool calls' arguments, results and errors
 * cleared, originals deleted, journal payloads emptied, the round contexts and compaction summary
 * dropped. Turns, their cost and the ledger stay: usage totals are unchanged. At most `maxSessions`
 * per run; the next run takes the rest. Each tenant purged gets its `tenant.retention_purged` entry.
 */
export async function purgeDueTranscripts(
  pool: pg.Pool,
  options: { maxSessions?: number; now?: Date } = {},
): Promise<RetentionResult> {
  const max = options.maxSessions ?? 500;
  const now = options.now ?? new Date();
  const total: RetentionResult = {
    tenants: 0,
    sessions: 0,
    messages: 0,
    toolCalls: 0,
    originals: 0,
    events: 0,
  };
  const { rows: tenants } = await pool.query<{ id: string; days: number }>(`
    SELECT id, (settings->>'transcriptRetentionDays')::int AS days FROM tenants
    WHERE jsonb_typeof(settings->'transcriptRetentionDays') = 'number'
      AND (settings->>'transcriptRetentionDays') ~ '^[0-9]+$'
      AND (settings->>'transcriptRetentionDays')::int BETWEEN 1 AND 3650
      AND NOT kill_switch
    ORDER BY id`);
  for (const tenant of tenants) {
    if (total.sessions >= max) break;
    const { rows: due } = await pool.query<{ id: string }>(
      `SELECT s.id FROM sessions s
       WHERE s.tenant_id = $1::uuid AND s.content_purged_at IS NULL
         AND greatest(s.created_at, s.updated_at) < $2::timestamptz - make_interval(days => $3::int)
         AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id
           AND (t.status = ANY($4::text[]) OR t.created_at >= $2::timestamptz - make_interval(days => $3::int)))
       ORDER BY s.id LIMIT $5::int`,
      [tenant.id, now, tenant.days, [...HOLDS_SESSION_STATUSES], max - total.sessions],
    );
    if (due.length === 0) continue;
    const mine: RetentionResult = {
      tenants: 1,
      sessions: 0,
      messages: 0,
      toolCalls: 0,
      originals: 0,
      events: 0,
    };
    for (const { id } of due) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        // Locked and checked again: a turn admitted since the select keeps the session.
        const { rows: still } = await client.query(
          `SELECT 1 FROM sessions s WHERE s.id = $1::uuid AND s.content_purged_at IS NULL
             AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id AND t.status = ANY($2::text[]))
           FOR UPDATE`,
          [id, [...HOLDS_SESSION_STATUSES]],
        );
        if (still.length === 0) {
          await client.query('ROLLBACK');
          continue;
        }
        const m = await client.query('DELETE FROM messages WHERE session_id = $1::uuid', [id]);
        const c = await client.query(
          `UPDATE tool_calls SET arguments = '{}'::jsonb, result = NULL, error = NULL
           WHERE session_id = $1::uuid AND (arguments <> '{}'::jsonb OR result IS NOT NULL OR error IS NOT NULL)`,
          [id],
        );
        const o = await client.query(
          'DELETE FROM tool_result_originals WHERE tenant_id = $1::uuid AND session_id = $2::uuid',
          [tenant.id, id],
        );
        const e = await client.query(
          `UPDATE events SET data = '{}'::jsonb WHERE session_id = $1::uuid AND data <> '{}'::jsonb`,
          [id],
        );
        await client.query(
          'DELETE FROM turn_round_contexts WHERE turn_id IN (SELECT id FROM turns WHERE session_id = $1::uuid)',
          [id],
        );
        await client.query(
          'UPDATE turns SET continuation = NULL WHERE session_id = $1::uuid AND continuation IS NOT NULL',
          [id],
        );
        await client.query(
          'UPDATE sessions SET compaction = NULL, content_purged_at = now() WHERE id = $1::uuid',
          [id],
        );
        await client.query('COMMIT');
        mine.sessions++;
        mine.messages += m.rowCount ?? 0;
        mine.toolCalls += c.rowCount ?? 0;
        mine.originals += o.rowCount ?? 0;
        mine.events += e.rowCount ?? 0;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    }
    if (mine.sessions > 0) {
      await pool.query(
        `INSERT INTO audit_events (id, tenant_id, actor, action, target_type, target_id, details)
         VALUES ($1::uuid, $2::uuid, 'system', 'tenant.retention_purged', 'tenant', $2, $3::jsonb)`,
        [
          newId(),
          tenant.id,
          JSON.stringify(
            auditDetails({
              retentionDays: tenant.days,
              sessions: mine.sessions,
              messages: mine.messages,
              toolCalls: mine.toolCalls,
              originals: mine.originals,
              events: mine.events,
            }),
          ),
        ],
      );
      total.tenants++;
      for (const k of ['sessions', 'messages', 'toolCalls', 'originals', 'events'] as const)
        total[k] += mine[k];
    }
  }
  return total;
}

/** `tenant.exported`, once an export's last line is produced (docs/adr/0068). */
export async function auditTenantExported(
  pool: pg.Pool,
  tenantId: string,
  actor: string,
  tables: Record<string, number>,
  resumed: boolean,
): Promise<void> {
  await pool.query(
    `INSERT INTO audit_events (id, tenant_id, actor, action, target_type, target_id, details)
     VALUES ($1::uuid, $2::uuid, $3, 'tenant.exported', 'tenant', $2, $4::jsonb)`,
    [newId(), tenantId, actor, JSON.stringify(auditDetails({ tables, resumed }))],
  );
}
