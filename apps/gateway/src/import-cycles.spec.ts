import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(__dirname, '../../..');

/** The sources whose import graph must have no cycle: the gateway and the protocols' mappings. */
const DIRS = ['apps/gateway/src', 'libs/protocols/src'];

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

/** The module specifiers a file imports or re-exports, type-only ones and `import('…')` types included. */
function specifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      found.push(node.argument.literal.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push(node.moduleReference.expression.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** A specifier → the file it names (relative paths, and the `@switchboard/*` paths of tsconfig.base.json). */
function resolver(root: string): (from: string, spec: string) => string | undefined {
  const config = JSON.parse(readFileSync(join(root, 'tsconfig.base.json'), 'utf8')) as {
    compilerOptions: { paths: Record<string, string[]> };
  };
  const paths = config.compilerOptions.paths;
  return (from, spec) => {
    if (paths[spec]) return join(root, paths[spec][0]);
    if (!spec.startsWith('.')) return undefined;
    const base = resolve(dirname(from), spec);
    return [`${base}.ts`, join(base, 'index.ts')].find((candidate) => existsSync(candidate));
  };
}

/**
 * The import cycles among the files under `dirs` of `root` (each as its files, relative to `root`,
 * in import order, the first repeated at the end): a depth-first search over the import graph.
 */
export function importCycles(root: string, dirs: string[]): string[][] {
  const files = new Set(dirs.flatMap((d) => sources(join(root, d))));
  const resolve = resolver(root);
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const targets = specifiers(file)
      .map((spec) => resolve(file, spec))
      .filter((target): target is string => target !== undefined && files.has(target));
    edges.set(file, [...new Set(targets)]);
  }
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === 'open') {
        cycles.push([...stack.slice(stack.indexOf(next)), next].map((f) => relative(root, f)));
      } else if (!state.has(next)) {
        visit(next);
      }
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...files].sort()) if (!state.has(file)) visit(file);
  return cycles;
}

describe('the import graph of apps/gateway/src and libs/protocols/src', () => {
  it('has no cycle (type-only imports included)', () => {
    expect(importCycles(ROOT, DIRS)).toEqual([]);
  });

  it('finds a cycle made by a type-only import, and through a path alias', () => {
    const root = mkdtempSync(join(tmpdir(), 'import-cycles-'));
    try {
      mkdirSync(join(root, 'src/lib'), { recursive: true });
      writeFileSync(
        join(root, 'tsconfig.base.json'),
        JSON.stringify({ compilerOptions: { paths: { '@x/lib': ['src/lib/index.ts'] } } }),
      );
      writeFileSync(join(root, 'src/a.ts'), "import type { B } from './b';\nexport type A = B;\n");
      writeFileSync(join(root, 'src/b.ts'), "export { type L as B } from '@x/lib';\n");
      writeFileSync(join(root, 'src/lib/index.ts'), "export type L = import('../a').A | 1;\n");
      writeFileSync(join(root, 'src/c.ts'), "import { x } from './d';\nexport const c = x;\n");
      writeFileSync(join(root, 'src/d.ts'), 'export const x = 1;\n');
      expect(importCycles(root, ['src'])).toEqual([['src/a.ts', 'src/b.ts', 'src/lib/index.ts', 'src/a.ts']]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('keeps the platform free of protocols', () => {
    // Its specs may compose the platform with the protocols (errors.spec.ts does); its code may not.
    const platform = sources(join(ROOT, 'apps/gateway/src/platform')).filter((f) => !f.endsWith('.spec.ts'));
    const imported = platform.flatMap((file) =>
      specifiers(file)
        .filter((spec) => spec === '@switchboard/protocols' || /(^|\/)protocols\//.test(spec))
        .map((spec) => `${relative(ROOT, file)} → ${spec}`),
    );
    expect(imported).toEqual([]);
  });
});

describe('libs/protocols', () => {
  /** Modules that do I/O or belong to an app: a mapping imports none of them. */
  const FORBIDDEN = [
    /^@nestjs\//,
    /^@prisma\//,
    /^ioredis$/,
    /^bullmq$/,
    /^pg$/,
    /^@switchboard\/(database|platform|queue|store|live|admission|turns)$/,
  ];

  it('imports no Nest, Prisma, ioredis, BullMQ or database, and nothing outside itself but packages', () => {
    const lib = join(ROOT, 'libs/protocols/src');
    const imported = sources(lib).flatMap((file) =>
      specifiers(file)
        .filter(
          (spec) =>
            FORBIDDEN.some((f) => f.test(spec)) ||
            (spec.startsWith('.') && !resolve(dirname(file), spec).startsWith(lib)),
        )
        .map((spec) => `${relative(ROOT, file)} → ${spec}`),
    );
    expect(imported).toEqual([]);
  });
});
