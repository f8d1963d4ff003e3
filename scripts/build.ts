/**
 * `npm run build`: compiles the four apps and the libraries they use to CommonJS in dist/, with
 * @swc/core (the compiler the tests and `npm run start:*` already use at load time), so
 * production runs plain `node dist/apps/<app>/src/main.js` with no compiler loaded
 * (docs/adr/0034-build-image-and-kubernetes.md).
 *
 *   npm run build                     # → dist/
 *   npm run build -- --out-dir /tmp/x # elsewhere (the build test does this)
 *
 * The tree keeps its shape (dist/apps/gateway/src/main.js, dist/libs/config/src/index.js), and
 * the `@switchboard/*` aliases of tsconfig.base.json are rewritten to relative requires, so node
 * resolves them with no loader. Types are not checked here: `npm run typecheck` does that.
 * Spec files, libs/testing and the scripts are not part of what runs in production. A library's
 * assets/ folder (data files it reads at run time beside its src/, e.g. the word vectors of
 * libs/providers) is copied as it is.
 */
import { cp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { transformFile, type Options } from '@swc/core';

const ROOT = path.resolve(__dirname, '..');
const SOURCE_DIRS = ['apps', 'libs'];
/** Test helpers: no production code imports them (the build test checks the output runs). */
const EXCLUDED_LIBS = new Set(['testing']);
/** The web console is built by Vite (`npm run console:build`), not here. */
const EXCLUDED_APPS = new Set(['console']);
const TEST_FILE = /\.(spec|int\.spec|e2e\.spec)\.ts$|[\\/]test-support\.ts$/;

interface TsConfig {
  compilerOptions: { paths: Record<string, string[]> };
}

/** The options of .swcrc (what @swc-node/register and jest use), plus the path aliases. */
export function swcOptions(root = ROOT): Options {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { compilerOptions } = require(path.join(root, 'tsconfig.base.json')) as TsConfig;
  return {
    swcrc: false,
    configFile: false,
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
      baseUrl: root,
      paths: compilerOptions.paths,
    },
    module: { type: 'commonjs' },
    sourceMaps: true,
  };
}

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.join(e.parentPath, e.name))
    .filter((file) => !TEST_FILE.test(file))
    .filter((file) => {
      const [top, name] = path.relative(ROOT, file).split(path.sep);
      return !(top === 'libs' && EXCLUDED_LIBS.has(name)) && !(top === 'apps' && EXCLUDED_APPS.has(name));
    });
}

/** Compiles every production source file under apps/ and libs/ into `outDir`; returns how many. */
export async function build(outDir: string): Promise<number> {
  await rm(outDir, { recursive: true, force: true });
  const files = (await Promise.all(SOURCE_DIRS.map((d) => sourceFiles(path.join(ROOT, d))))).flat();
  const options = swcOptions();
  await Promise.all(
    files.map(async (file) => {
      const target = path.join(outDir, path.relative(ROOT, file)).replace(/\.ts$/, '.js');
      const { code, map } = await transformFile(file, {
        ...options,
        filename: file,
        outputPath: target,
        sourceFileName: path.relative(path.dirname(target), file),
      });
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, `${code}\n//# sourceMappingURL=${path.basename(target)}.map\n`);
      if (map) await writeFile(`${target}.map`, map);
    }),
  );
  for (const lib of await readdir(path.join(ROOT, 'libs'))) {
    const assets = path.join(ROOT, 'libs', lib, 'assets');
    if (EXCLUDED_LIBS.has(lib) || !(await readdir(assets).catch(() => null))) continue;
    await cp(assets, path.join(outDir, 'libs', lib, 'assets'), { recursive: true });
  }
  return files.length;
}

if (require.main === module) {
  const at = process.argv.indexOf('--out-dir');
  const outDir = path.resolve(at > 0 ? process.argv[at + 1] : path.join(ROOT, 'dist'));
  const started = performance.now();
  build(outDir).then(
    (count) =>
      console.log(
        `compiled ${count} files to ${path.relative(process.cwd(), outDir) || '.'} in ${Math.round(performance.now() - started)} ms`,
      ),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
