import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigSchema } from './config';
import { CONFIG_DOCS, configRows, readmeConfigRows, withConfigTable } from './docs';

const README = readFileSync(path.resolve(__dirname, '../../../README.md'), 'utf8');

describe('the README configuration table', () => {
  it('is the one generated from the schema (run npm run docs:config after changing a variable)', () => {
    expect(readmeConfigRows(README)).toEqual(configRows());
  });

  it('documents every variable of the schema with a meaning, and nothing the schema lacks', () => {
    expect(Object.keys(CONFIG_DOCS).sort()).toEqual(Object.keys(ConfigSchema.shape).sort());
    for (const doc of Object.values(CONFIG_DOCS)) expect(doc.meaning.trim().length).toBeGreaterThan(5);
  });

  it('reads a default from the schema, so a changed default changes the table', () => {
    const rows = new Map(configRows().map(([name, dflt]) => [name, dflt]));
    expect(rows.get('`HARNESS_CONCURRENCY`')).toBe('`32`');
    expect(rows.get('`OPENAI_API_KEY`')).toBe('unset');
    expect(rows.get('`ADMIN_TOKEN`')).toBe('unset (admin API disabled)');
  });

  it('refuses a README without its markers instead of appending a table', () => {
    expect(() => withConfigTable('# no table here')).toThrow(/lacks the markers/);
    expect(readmeConfigRows('# no table here')).toEqual([]);
  });
});
