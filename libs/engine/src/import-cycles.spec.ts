import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';

/**
 * The engine's import graph has no circles, type-only imports included: every module can be read
 * (and moved) after the ones it imports. Shared types live in leaf modules (`types.ts`,
 * `provider-attempts.ts`, `run/resources.ts`, `run/prepared-call.ts`,
 * `side-calls/reflection-note.ts`) rather than beside the code that uses them.
 */

const SRC = __dirname;

/** Every import, `import type`, `export … from` and `import()` of a source, as written. */
function specifiers(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

/** A relative specifier (or the engine's own package name) as a file of `files`, else undefined. */
function resolveIn(
  files: ReadonlySet<string>,
  from: string,
  spec: string,
  selfIndex?: string,
): string | undefined {
  if (selfIndex && spec === '@switchboard/engine') return selfIndex;
  if (!spec.startsWith('.')) return undefined;
  const base = resolve(dirname(from), spec);
  return [`${base}.ts`, join(base, 'index.ts'), base].find((f) => files.has(f));
}

/** The import graph of `sources` (path → text): each file and the files of the set it imports. */
function importGraph(sources: ReadonlyMap<string, string>, selfIndex?: string): Map<string, string[]> {
  const files = new Set(sources.keys());
  return new Map(
    [...sources].map(([file, text]) => [
      file,
      specifiers(text).flatMap((s) => resolveIn(files, file, s, selfIndex) ?? []),
    ]),
  );
}

/** The circles of a graph: its strongly connected components with more than one file, or a self-import (Tarjan). */
export function importCycles(graph: ReadonlyMap<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

function sourcesUnder(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) for (const [f, t] of sourcesUnder(path)) out.set(f, t);
    else if (name.endsWith('.ts')) out.set(path, readFileSync(path, 'utf8'));
  }
  return out;
}

describe('import circles', () => {
  it('libs/engine/src has none, type-only imports included', () => {
    const sources = sourcesUnder(SRC);
    const graph = importGraph(sources, join(SRC, 'index.ts'));
    const cycles = importCycles(graph).map((c) => c.map((f) => relative(SRC, f)).join(' ↔ '));
    expect(sources.size).toBeGreaterThan(40);
    expect(cycles).toEqual([]);
  });

  // The check itself: it sees a circle made only of type imports, re-exports and index files.
  it.each([
    [
      'type-only imports',
      { 'a.ts': "import type { B } from './b';", 'b.ts': "import type { A } from './a';" },
      [['a.ts', 'b.ts']],
    ],
    [
      'a re-export through an index',
      {
        'x/index.ts': "export * from './y';",
        'x/y.ts': "import { z } from '../z';",
        'z.ts': "export type { Y } from './x';",
      },
      [['x/index.ts', 'x/y.ts', 'z.ts']],
    ],
    [
      "the engine's own package name",
      { 'index.ts': "export * from './a';", 'a.ts': "import { b } from '@switchboard/engine';" },
      [['a.ts', 'index.ts']],
    ],
    [
      'a chain and another package (no circle)',
      { 'a.ts': "import { b } from './b';", 'b.ts': "import { p } from '@switchboard/providers';" },
      [],
    ],
  ])('finds circles through %s', (_, files, expected) => {
    const root = '/virtual';
    const sources = new Map(Object.entries(files).map(([f, t]) => [join(root, f), t]));
    const found = importCycles(importGraph(sources, join(root, 'index.ts'))).map((c) =>
      c.map((f) => relative(root, f)),
    );
    expect(found).toEqual(expected);
  });
});
