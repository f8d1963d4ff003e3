/**
 * The Dockerfile, checked without a Docker engine (none runs on the machines the tests run on):
 * dockerfile-utils' linter (the one behind VS Code's Dockerfile support) finds no problem, and the
 * image is what docs/adr/0034 says: Node 24, a multi-stage build whose final stage runs the
 * compiled JavaScript with production dependencies only, as `node`, with a HEALTHCHECK, one image
 * for every app. Every file it copies from the build context exists and is not .dockerignored.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DockerfileParser, type Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';

const ROOT = path.resolve(__dirname, '../../..');
const DOCKERFILE = path.join(ROOT, 'Dockerfile');
const APPS = ['gateway', 'harness-worker', 'triage-worker', 'hooks-worker'];

interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
}

function stagesOf(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const instruction of DockerfileParser.parse(text).getInstructions()) {
    const args = instruction.getArguments().map((a) => a.getValue());
    if (instruction.getKeyword() === 'FROM') {
      stages.push({ name: args[2] ?? String(stages.length), from: args[0], instructions: [] });
    } else {
      stages.at(-1)?.instructions.push(instruction);
    }
  }
  return stages;
}

const keyword = (stage: Stage, name: string) => stage.instructions.filter((i) => i.getKeyword() === name);
const args = (i: Instruction) => i.getArguments().map((a) => a.getValue());
/** An instruction's text after its keyword (a RUN's shell line, a CMD's JSON array). */
const body = (i: Instruction) => i.getTextContent().replace(/^\s*\w+\s+/, '');

/** .dockerignore's patterns (Go's filepath.Match plus `**`), as Docker applies them to a path and its parents. */
function dockerignored(file: string): boolean {
  const patterns = fs
    .readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const toRegExp = (pattern: string) =>
    new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*\*\//g, '@@ANY_DIRS@@')
        .replace(/\*/g, '[^/]*')
        .replace(/\?/g, '[^/]')
        .replace(/@@ANY_DIRS@@/g, '(?:.*/)?')}$`,
    );
  const parts = file.split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  return patterns.some((p) => prefixes.some((prefix) => toRegExp(p).test(prefix)));
}

describe('Dockerfile', () => {
  const text = fs.readFileSync(DOCKERFILE, 'utf8');
  const stages = stagesOf(text);
  const runtime = stages.at(-1)!;

  it('has no problem dockerfile-utils can find (and the linter does find a broken one)', () => {
    expect(validate(text).map((d) => d.message)).toEqual([]);
    expect(validate(`${text}\nCOPY onlyone\n`).length).toBeGreaterThan(0);
  });

  it('builds on Node 24, the version of .nvmrc', () => {
    const nodeImage = /^ARG NODE_IMAGE=(\S+)$/m.exec(text)?.[1];
    expect(nodeImage).toMatch(/^node:24(\.\d+)*-[a-z]+-slim$/);
    const nvmrc = fs.readFileSync(path.join(ROOT, '.nvmrc'), 'utf8').trim();
    expect(nodeImage?.split(':')[1].split(/[.-]/)[0]).toBe(nvmrc);
    expect(stages[0].from).toBe('${NODE_IMAGE}');
  });

  it('ends in a runtime stage that copies its node_modules from a production-only install', () => {
    expect(runtime.name).toBe('runtime');
    const sources = keyword(runtime, 'COPY').map((c) => ({
      from: /--from=(\S+)/.exec(c.getTextContent())?.[1],
      src: args(c)
        .filter((a) => !a.startsWith('--'))
        .slice(0, -1),
    }));
    const modules = sources.find((s) => s.src.includes('/app/node_modules'));
    expect(modules?.from).toBeDefined();
    const prodStage = stages.find((s) => s.name === modules?.from)!;
    // The shell lines, without their quoted messages (which mention npm install too).
    const install = keyword(prodStage, 'RUN')
      .map((i) => body(i).replace(/'[^']*'/g, "''"))
      .join('\n');
    expect(install).toMatch(/npm ci --omit=dev/);
    expect(install).not.toMatch(/npm (ci|install)(?![^|\n]*--omit=dev)/);
    // The compiled output, and the generated Prisma client, come from the build stage.
    expect(sources).toContainEqual({ from: 'build', src: ['/app/dist'] });
    expect(sources).toContainEqual({ from: 'build', src: ['/app/node_modules/.prisma'] });
    const build = stages.find((s) => s.name === 'build')!;
    expect(keyword(build, 'RUN').map(body).join('\n')).toMatch(/npm run build/);
  });

  it('runs the compiled JavaScript of the app APP names, with no compiler loaded', () => {
    const cmd = body(keyword(runtime, 'CMD')[0]);
    expect(cmd).toContain('exec node dist/apps/${APP}/src/main.js');
    expect(text).not.toMatch(/@swc-node\/register|\.ts"\]?$/m);
    for (const app of APPS) expect(fs.existsSync(path.join(ROOT, 'apps', app, 'src', 'main.ts'))).toBe(true);
    // Nothing the runtime needs is a dev tool, and no compiler is a production dependency.
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      scripts: Record<string, string>;
    };
    for (const tool of ['@swc-node/register', '@swc/core', 'typescript', 'ts-node'])
      expect({ tool, production: tool in pkg.dependencies }).toEqual({ tool, production: false });
    expect(pkg.scripts['db:migrate']).toBe('prisma migrate deploy');
    expect(pkg.dependencies.prisma).toBeDefined();
  });

  it('runs as the unprivileged node user, with a HEALTHCHECK on /healthz of the right port', () => {
    expect(keyword(runtime, 'USER').map(args)).toEqual([['node']]);
    const [healthcheck] = keyword(runtime, 'HEALTHCHECK');
    expect(healthcheck).toBeDefined();
    const check = body(healthcheck);
    expect(check).toMatch(/--interval=\d+s/);
    expect(check).toContain('/healthz');
    expect(check).toMatch(/APP === 'gateway' \? process\.env\.PORT : process\.env\.METRICS_PORT/);
    const env = keyword(runtime, 'ENV').flatMap(args);
    expect(env).toEqual(expect.arrayContaining(['NODE_ENV=production', 'PORT=3000', 'METRICS_PORT=9464']));
    expect(keyword(runtime, 'EXPOSE').flatMap(args)).toEqual(['3000', '9464']);
  });

  it('copies from the build context only files that exist and are not .dockerignored', () => {
    const contextSources = stages.flatMap((stage) =>
      keyword(stage, 'COPY')
        .filter((c) => !/--from=/.test(c.getTextContent()))
        .flatMap((c) =>
          args(c)
            .filter((a) => !a.startsWith('--'))
            .slice(0, -1),
        ),
    );
    expect(contextSources.length).toBeGreaterThan(5);
    for (const source of contextSources) {
      expect({ source, exists: fs.existsSync(path.join(ROOT, source)) }).toEqual({ source, exists: true });
      expect({ source, ignored: dockerignored(source) }).toEqual({ source, ignored: false });
    }
    // The matcher itself: what .dockerignore lists is ignored.
    expect(dockerignored('docs/ARCHITECTURE.md')).toBe(true);
    expect(dockerignored('libs/config/src/config.spec.ts')).toBe(true);
    expect(dockerignored('libs/config/node_modules/x')).toBe(true);
    expect(dockerignored('libs/config/src/config.ts')).toBe(false);
  });
});
