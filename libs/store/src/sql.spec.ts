import {
  planEachCall,
  preparedStatementsEnabled,
  queryConfig,
  setPreparedStatements,
  sql,
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
