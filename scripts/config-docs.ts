/**
 * Writes the README's configuration table from libs/config (the schema's defaults, CONFIG_DOCS'
 * meanings) and formats the README: `npm run docs:config`. libs/config/src/docs.spec.ts fails
 * while the committed table differs.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { withConfigTable } from '../libs/config/src/docs';

const readme = path.resolve(__dirname, '..', 'README.md');
writeFileSync(readme, withConfigTable(readFileSync(readme, 'utf8')));
execFileSync(process.execPath, [require.resolve('prettier/bin/prettier.cjs'), '--write', readme], {
  stdio: 'inherit',
});
