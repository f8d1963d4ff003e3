import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compactJsonText, compactJsonValue, CORPUS_DIR } from './index';

/**
 * `light` JSON is lossless: a reader of the table form gives back the same JSON value. The reader
 * lives here, in the test, as the proof: tables (the constants line, the header, one line per row,
 * cells bare or JSON) and `key: <JSON>` lines around them.
 */

function readCell(s: string): unknown {
  if (/^["[{]/.test(s) || /^(true|false|null|-?\d[\d.eE+-]*)$/.test(s)) return JSON.parse(s);
  return s;
}

function unflatten(flat: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(flat)) {
    const parts = key.split('.');
    let o = out;
    for (const p of parts.slice(0, -1)) o = (o[p] ??= {}) as Record<string, unknown>;
    o[parts[parts.length - 1]] = v;
  }
  return out;
}

function readTable(lines: string[], at: number): { rows: unknown[]; next: number } {
  const n = Number(/^\((\d+) rows × \d+ columns\)$/.exec(lines[at])![1]);
  let i = at + 1;
  const constants: Record<string, unknown> = {};
  if (lines[i].startsWith('same in every row: ')) {
    for (const part of lines[i].slice('same in every row: '.length).split(' | ')) {
      const eq = part.indexOf('=');
      constants[part.slice(0, eq)] = readCell(part.slice(eq + 1));
    }
    i++;
  }
  const columns = lines[i++].split(' | ');
  const rows = lines.slice(i, i + n).map((line) => {
    const flat: Record<string, unknown> = { ...constants };
    line.split(' | ').forEach((c, k) => {
      if (c !== '') flat[columns[k]] = readCell(c);
    });
    return unflatten(flat);
  });
  return { rows, next: i + n };
}

function readLight(text: string): unknown {
  const lines = text.split('\n');
  if (lines[0].startsWith('(')) return readTable(lines, 0).rows;
  const out: Record<string, unknown> = {};
  for (let i = 0; i < lines.length;) {
    const m = /^([^:]+):(?: (.*))?$/.exec(lines[i])!;
    if (m[2] !== undefined) {
      out[m[1]] = JSON.parse(m[2]);
      i++;
    } else {
      const t = readTable(lines, i + 1);
      out[m[1]] = t.rows;
      i = t.next;
    }
  }
  return out;
}

describe('light JSON reads back to the same value', () => {
  it('the API list of the corpus', () => {
    const raw = readFileSync(join(CORPUS_DIR, 'api-charges-list.json'), 'utf8');
    const light = compactJsonText(raw, 'light')!;
    expect(light.lossy).toBe(false);
    expect(readLight(light.text)).toEqual(JSON.parse(raw));
  });

  it('awkward cells: pipes, numbers as strings, empty and padded strings, missing keys, nulls, arrays', () => {
    const rows = [
      { id: 1, name: 'a | b', code: '007', note: '', pad: ' x ', tags: ['p|q', 2], flag: true, v: null },
      { id: 2, name: 'true', code: '1e5', note: 'null', tags: [], flag: false, v: { w: 'x | y' } },
      { id: 3, name: '{not json', code: '-1', pad: 'plain words', tags: [{ k: 1 }], flag: true, v: 3.5 },
      { id: 4, name: '"quoted"', code: 'x', note: 'line\nbreak', flag: true, v: 'same' },
    ];
    const text = compactJsonValue(rows, 'light').text;
    expect(readLight(text)).toEqual(rows);
  });
});
