import {
  join,
  ofTenant,
  planEachCall,
  preparedStatementsEnabled,
  queryConfig,
  setPreparedStatements,
  sql,
  Sql,
  sqlList,
  statementName,
} from './sql';

describe('named prepared statements', () => {
  it('names a statement text from its third use on, the same name each time', () => {
    const text = `SELECT 1 AS once_${Date.now()}`;
    expect(statementName(text)).toBeUndefined();
    expect(statementName(text)).toBeUndefined();
    const name = statementName(text);
    expect(name).toMatch(/^sb_[\w-]{20}$/);
    expect(statementName(text)).toBe(name);
    expect(statementName(`${text} `)).toBeUndefined();
  });

  it('gives different texts different names, and the values stay parameters', () => {
    const q = (id: string) => sql`SELECT id FROM turns WHERE id = ${id}::uuid AND tenant_id = ${'t'}::uuid`;
    const configs = [1, 2, 3].map((i) => queryConfig(q(`id-${i}`)));
    expect(configs.map((c) => c.name === undefined)).toEqual([true, true, false]);
    expect(configs[2]).toEqual({
      name: expect.stringMatching(/^sb_/),
      text: 'SELECT id FROM turns WHERE id = $1::uuid AND tenant_id = $2::uuid',
      values: ['id-3', 't'],
    });
    const other = sql`SELECT id FROM sessions WHERE id = ${'x'}::uuid`;
    for (let i = 0; i < 2; i++) queryConfig(other);
    expect(queryConfig(other).name).not.toBe(configs[2].name);
  });

  it('never names a statement planned for each call, however often it recurs', () => {
    const q = (term: string) =>
      planEachCall(sql`SELECT id FROM memory_records WHERE search @@ to_tsquery(${term})`);
    const configs = [1, 2, 3, 4, 5, 6].map((i) => queryConfig(q(`t${i}`)));
    expect(configs.every((c) => c.name === undefined)).toBe(true);
    expect(configs[5].values[0]).toBe('t6');
  });

  describe('with DATABASE_PREPARED_STATEMENTS=false (PgBouncer in transaction pooling mode)', () => {
    afterEach(() => setPreparedStatements(true));

    it('names no statement, not even one already named, and names again once switched back on', () => {
      const q = sql`SELECT id FROM agents WHERE id = ${'a'}::uuid AND name = ${'pgbouncer-switch'}`;
      const named = [1, 2, 3].map(() => queryConfig(q))[2].name;
      expect(named).toMatch(/^sb_/);
      setPreparedStatements(false);
      expect(preparedStatementsEnabled()).toBe(false);
      const configs = [1, 2, 3, 4, 5].map(() => queryConfig(q));
      expect(configs.every((c) => !('name' in c))).toBe(true);
      expect(configs[0]).toEqual({ text: q.toQuery().text, values: ['a', 'pgbouncer-switch'] });
      const fresh = `SELECT 2 AS never_${Date.now()}`;
      for (let i = 0; i < 5; i++) expect(statementName(fresh)).toBeUndefined();
      setPreparedStatements(true);
      expect(queryConfig(q).name).toBe(named);
    });
  });
});

describe('statement texts rendered once per shape (issue 37)', () => {
  // A fresh render of the same tree, without the cache: what toQuery must always equal.
  const plain = (q: Sql): { text: string; values: unknown[] } => {
    const values: unknown[] = [];
    const walk = (x: Sql): string => {
      let text = x.strings[0];
      x.values.forEach((v, i) => {
        if (v instanceof Sql) text += walk(v);
        else {
          values.push(v === undefined ? null : v);
          text += `$${values.length}`;
        }
        text += x.strings[i + 1];
      });
      return text;
    };
    return { text: walk(q), values };
  };

  it('hands out the same text object for a call site, with each call’s values', () => {
    const q = (id: string) => sql`SELECT id FROM turns WHERE id = ${id}::uuid AND seq = ${undefined}`;
    const a = q('a').toQuery();
    const b = q('b').toQuery();
    expect(b).toEqual({ text: 'SELECT id FROM turns WHERE id = $1::uuid AND seq = $2', values: ['b', null] });
    expect(b.text).toBe(a.text);
    // Built once: later calls of the call site do not render it again.
    const render = jest.spyOn(Sql.prototype as unknown as { render: () => string }, 'render');
    try {
      expect(q('c').toQuery().values).toEqual(['c', null]);
      expect(render).not.toHaveBeenCalled();
    } finally {
      render.mockRestore();
    }
  });

  it('renders again when the fragments change shape, and renumbers their parameters', () => {
    const rows = (n: number) => join(Array.from({ length: n }, (_, i) => sql`(${i}, ${`v${i}`})`));
    const q = (n: number, tenant: boolean, status: string[]) =>
      sql`INSERT INTO t (a, b) VALUES ${rows(n)} ON CONFLICT DO NOTHING WHERE ${
        tenant ? ofTenant('tenant_id', 'tt') : 'no tenant'
      } AND s IN ${sqlList(status)} AND x = ${'last'}`;
    const cases: [number, boolean, string[]][] = [
      [1, true, ['a']],
      [1, true, ['a']],
      [3, true, ['a']],
      [3, false, ['a']],
      [3, false, ['a', 'b']],
      [3, false, ['a', 'c']],
      [1, true, ['a']],
    ];
    for (const [n, tenant, status] of cases) {
      const query = q(n, tenant, status);
      expect(query.toQuery()).toEqual(plain(query));
    }
  });

  it("keeps a few shapes of one template (the checkpoint's CTE lists), rendering each once", () => {
    const cte = [sql`a AS (SELECT ${1})`, sql`b AS (SELECT ${2})`, sql`c AS (SELECT ${3})`];
    const q = (kinds: number[]) => sql`WITH ${join(kinds.map((k) => cte[k]))} SELECT ${'done'}`;
    const kinds = [[0], [0, 1], [1, 2]];
    for (const k of kinds) q(k).toQuery();
    const render = jest.spyOn(Sql.prototype as unknown as { render: () => string }, 'render');
    try {
      for (const k of [...kinds, ...kinds]) expect(q(k).toQuery()).toEqual(plain(q(k)));
      expect(render).not.toHaveBeenCalled();
    } finally {
      render.mockRestore();
    }
  });
});
