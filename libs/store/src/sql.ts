import { createHash } from 'node:crypto';
import type pg from 'pg';
import { openRows } from '@switchboard/database';

/**
 * Typed SQL over node-postgres for the hot path (docs/adr/0010-turn-store-on-pg.md).
 *
 * `sql` is a tagged template: every interpolated value becomes a `$n` parameter, and an
 * interpolated `Sql` fragment (from `sql` or `join`) is spliced in with its own parameters
 * renumbered. Values are never concatenated into the text. Row types are declared by the caller
 * (`db.rows<{ id: string }>(sql`...`)`); column aliases in the statement give them their
 * camelCase names.
 *
 * Values go through node-postgres' own conversion: strings, numbers, booleans, null, Dates and
 * Buffers as themselves; JS arrays as Postgres arrays (`$1::uuid[]`); pass JSON through `json()`
 * and cast it (`${json(v)}::jsonb`), since a plain object would also be JSON but an array would not.
 */
export class Sql {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
    /** False: never a named prepared statement, so Postgres plans it for each call's values (`planEachCall`). */
    readonly prepare = true,
  ) {}

  /**
   * The statement text with `$1..$n` placeholders and its parameter values. The text is built once
   * per shape of a call site's statement and the same string handed out after (`renderedTexts`).
   */
  toQuery(): { text: string; values: unknown[] } {
    const values: unknown[] = [];
    let rendered = renderedTexts.get(this.strings);
    const known = rendered?.find((r) => sameShape(r.shape, this));
    if (known) {
      collectValues(this, values);
      return { text: known.text, values };
    }
    const text = this.render(values);
    if (!rendered) renderedTexts.set(this.strings, (rendered = []));
    rendered.unshift({ text, shape: shapeOf(this) });
    if (rendered.length > SHAPES_PER_TEMPLATE) rendered.pop();
    return { text, values };
  }

  private render(values: unknown[]): string {
    let text = this.strings[0];
    for (let i = 0; i < this.values.length; i++) {
      const v = this.values[i];
      if (v instanceof Sql) text += v.render(values);
      else {
        values.push(v === undefined ? null : v);
        text += `$${values.length}`;
      }
      text += this.strings[i + 1];
    }
    return text;
  }
}

/** A parameterised statement or fragment: `sql`SELECT ... WHERE id = ${id}::uuid``. */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  // The template's own (frozen) array: the same object on every call from one place in the code,
  // which is what `renderedTexts` keys on.
  return new Sql(strings, values);
}

/** Where a statement's fragments are: each value's own shape when it is a fragment, else undefined. */
interface SqlShape {
  strings: readonly string[];
  fragments: (SqlShape | undefined)[];
}

/**
 * The texts rendered for a statement, by its template's strings, each with the shape it had, the
 * newest first. A hot path's statements are large CTEs: building the text again for every call,
 * then flattening and hashing it to find its prepared statement's name, was the store's largest CPU
 * cost of its own in the harness (issue 37). The same string object each time also keeps its hash.
 * A few shapes per template: the checkpoint's template takes a different list of CTEs for each kind
 * of checkpoint. Weak: a template is its call site's, so this holds one entry per place a statement
 * is written.
 */
const renderedTexts = new WeakMap<readonly string[], { text: string; shape: SqlShape }[]>();
const SHAPES_PER_TEMPLATE = 8;

function shapeOf(query: Sql): SqlShape {
  return {
    strings: query.strings,
    fragments: query.values.map((v) => (v instanceof Sql ? shapeOf(v) : undefined)),
  };
}

/**
 * True when `query` renders to the text `shape` rendered to: the same strings (the same template,
 * or equal contents for fragments built per call: `join`, `ofTenant`, `sqlList`) and fragments at
 * the same places, recursively. Parameter numbers follow from the shape alone.
 */
function sameShape(shape: SqlShape, query: Sql): boolean {
  const a = shape.strings;
  const b = query.strings;
  if (a !== b) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  }
  if (shape.fragments.length !== query.values.length) return false;
  for (let i = 0; i < query.values.length; i++) {
    const v = query.values[i];
    const f = shape.fragments[i];
    if (v instanceof Sql ? f === undefined || !sameShape(f, v) : f !== undefined) return false;
  }
  return true;
}

/** The parameter values in the order `render` numbers them. */
function collectValues(query: Sql, values: unknown[]): void {
  for (const v of query.values) {
    if (v instanceof Sql) collectValues(v, values);
    else values.push(v === undefined ? null : v);
  }
}

/**
 * `<column> = tenantId` as a check on a row found by its primary key, not as an index condition: the
 * planner keeps the key's one-row lookup. Written `tenant_id = $n`, Postgres picks an index that leads
 * on tenant_id for a tenant newer than the table's last ANALYZE (estimated one row) and then filters every
 * row of the tenant (measured on turns: 1,049 of 1,050 rows read for one lookup, growing with the tenant).
 * `column` is a trusted identifier (`tenant_id`, `t.tenant_id`), never input. A null `tenantId` matches no row.
 */
export function ofTenant(column: string, tenantId: string | null): Sql {
  return new Sql([`(${column} = `, '::uuid) IS TRUE'], [tenantId]);
}

/**
 * A constant list of string literals as statement text, `('a', 'b')`, for `x IN ${list}`: spliced
 * in, not parameters, so every call sends the same text (one prepared statement, safe under
 * pgbouncer's transaction pooling, docs/adr/0041) and the planner sees the values, as a partial
 * index's predicate needs. For the code's own constants (statuses), never input.
 */
export function sqlList(values: readonly string[]): Sql {
  return new Sql([`(${values.map((v) => `'${v.replace(/'/g, "''")}'`).join(', ')})`], []);
}

/** Fragments joined by a fixed separator (`, ` by default): multi-row VALUES lists, OR-ed conditions. */
export function join(parts: readonly Sql[], separator = ', '): Sql {
  if (parts.length === 0) return new Sql([''], []);
  return new Sql(['', ...parts.slice(1).map(() => separator), ''], parts);
}

/** A JSON parameter (cast it: `${json(v)}::jsonb`); undefined and null stay SQL NULL. */
export function json(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

/**
 * Named prepared statements (issue 22): a statement text this process has sent
 * `PREPARE_AFTER` times gets a name derived from its text, so node-postgres parses it once per
 * connection and Postgres keeps its plan (a generic one once it is as good as the custom ones)
 * instead of parsing and planning it on every call. Only texts that recur are named: a statement
 * whose text varies (a multi-row VALUES list) is not, and at most `PREPARED_MAX` texts ever are,
 * which bounds what each connection holds.
 */
const PREPARE_AFTER = 3;
const PREPARED_MAX = 200;
const seen = new Map<string, number>();
const names = new Map<string, string>();

/**
 * Whether statements may be named at all (`DATABASE_PREPARED_STATEMENTS`, docs/adr/0041): a
 * process-wide switch each app sets at startup (`InfraModule.forRoot`). Off, every statement goes
 * unnamed, as PgBouncer in transaction pooling mode before 1.21 requires: a named statement is
 * prepared on one server connection and the next transaction may run on another.
 */
let preparedStatements = true;

export function setPreparedStatements(enabled: boolean): void {
  preparedStatements = enabled;
}

export function preparedStatementsEnabled(): boolean {
  return preparedStatements;
}

/** The text's statement name once it recurs, undefined before (or when the bound is reached, or names are off). */
export function statementName(text: string): string | undefined {
  if (!preparedStatements) return undefined;
  const name = names.get(text);
  if (name !== undefined || names.size >= PREPARED_MAX) return name;
  const n = (seen.get(text) ?? 0) + 1;
  if (n < PREPARE_AFTER) {
    // Texts that never recur would otherwise pile up here.
    if (seen.size >= 10_000) seen.clear();
    seen.set(text, n);
    return undefined;
  }
  seen.delete(text);
  const named = `sb_${createHash('sha1').update(text).digest('base64url').slice(0, 20)}`;
  names.set(text, named);
  return named;
}

/**
 * `query` planned for its values on every call, never as a named prepared statement: for a statement
 * whose best plan depends on a value (a full-text query that one word makes selective and another
 * common), where Postgres' generic plan, chosen after five calls because its estimate looks cheaper,
 * can be worse by orders of magnitude (measured on memory search: 3.3 s against 2 ms, docs/adr/0022).
 */
export function planEachCall(query: Sql): Sql {
  return new Sql(query.strings, query.values, false);
}

/** `query` as node-postgres' query config, named when its text recurs (`statementName`). */
export function queryConfig(query: Sql): { text: string; values: unknown[]; name?: string } {
  const q = query.toQuery();
  if (!query.prepare) return q;
  const name = statementName(q.text);
  return name === undefined ? q : { ...q, name };
}

/** Where committed transactions and statements are counted (a prom-client Counter fits). */
export interface CountSink {
  inc(labels: { component: string }, value?: number): void;
}

export interface SqlDbOptions {
  /** The label the counts carry: `harness`, `admission`, `gateway`... */
  component: string;
  transactions?: CountSink;
  statements?: CountSink;
}

/** What a caller can run statements on: the pool (each statement its own transaction) or an open transaction. */
export interface SqlRunner {
  rows<R>(query: Sql): Promise<R[]>;
  first<R>(query: Sql): Promise<R | undefined>;
  /** The number of rows the statement affected. */
  execute(query: Sql): Promise<number>;
}

/**
 * A runner that can also open a transaction: the pool (`SqlDb`: BEGIN … COMMIT) or a transaction
 * already open (`within`: the work joins it, so it commits or rolls back with the rest).
 */
export interface SqlTransactor extends SqlRunner {
  transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T>;
}

/** `tx` as a transactor whose `transaction` joins `tx` instead of opening another. */
export function within(tx: SqlRunner): SqlTransactor {
  return {
    rows: (query) => tx.rows(query),
    first: (query) => tx.first(query),
    execute: (query) => tx.execute(query),
    transaction: (fn) => fn(tx),
  };
}

/**
 * The store's handle on a pg pool (the one Prisma's adapter uses, so both share its connections).
 * It counts what it sends: `transactions` committed (a statement outside a transaction is one) and
 * `statements` (BEGIN and COMMIT not included), for the per-turn budget and its metrics.
 */
export class SqlDb implements SqlTransactor {
  readonly counts = { transactions: 0, statements: 0 };

  constructor(
    readonly pool: pg.Pool,
    private readonly options: SqlDbOptions = { component: 'default' },
  ) {}

  /** The same pool counted under another component label (or into other sinks). */
  withOptions(options: Partial<SqlDbOptions>): SqlDb {
    return new SqlDb(this.pool, { ...this.options, ...options });
  }

  get component(): string {
    return this.options.component;
  }

  async rows<R>(query: Sql): Promise<R[]> {
    const result = await this.pool.query(queryConfig(query));
    this.count(1, 1);
    // Content sealed per tenant (docs/adr/0067) is read back as its plaintext.
    return openRows(result.rows as R[]);
  }

  async first<R>(query: Sql): Promise<R | undefined> {
    return (await this.rows<R>(query))[0];
  }

  async execute(query: Sql): Promise<number> {
    const result = await this.pool.query(queryConfig(query));
    this.count(1, 1);
    return result.rowCount ?? 0;
  }

  /**
   * BEGIN, `fn` on one connection, COMMIT; ROLLBACK when `fn` throws. A connection that fails
   * mid-transaction is released as broken so the pool drops it. Counted when it commits.
   */
  async transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let statements = 0;
    const tx: SqlRunner = {
      rows: async <R>(query: Sql) => {
        statements++;
        return openRows((await client.query(queryConfig(query))).rows as R[]);
      },
      first: async <R>(query: Sql) => {
        statements++;
        return (await openRows((await client.query(queryConfig(query))).rows as R[]))[0];
      },
      execute: async (query: Sql) => {
        statements++;
        return (await client.query(queryConfig(query))).rowCount ?? 0;
      },
    };
    try {
      await client.query('BEGIN');
      const result = await fn(tx);
      await client.query('COMMIT');
      client.release();
      this.count(1, statements);
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
        client.release();
      } catch (rollbackErr) {
        client.release(rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr)));
      }
      throw err;
    }
  }

  private count(transactions: number, statements: number): void {
    this.counts.transactions += transactions;
    this.counts.statements += statements;
    const labels = { component: this.options.component };
    this.options.transactions?.inc(labels, transactions);
    this.options.statements?.inc(labels, statements);
  }
}

/** A store handle on `pool` (`poolOf(prisma)` shares Prisma's), counted into the process's metrics under `component`. */
export function sqlDbFor(
  pool: pg.Pool,
  component: string,
  metrics?: { dbTransactions: CountSink; dbStatements: CountSink },
): SqlDb {
  return new SqlDb(pool, {
    component,
    transactions: metrics?.dbTransactions,
    statements: metrics?.dbStatements,
  });
}
