// @ts-check
const { compilerOptions } = require('./tsconfig.base.json');

/** `@switchboard/x` → `<rootDir>/libs/x/src/...`, from the same paths tsc and the apps use. */
const moduleNameMapper = Object.fromEntries(
  Object.entries(compilerOptions.paths).map(([alias, [target]]) => [`^${alias}$`, `<rootDir>/${target}`]),
);

/** @type {import('jest').Config['transform']} */
const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    {
      jsc: {
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
        target: 'es2022',
        keepClassNames: true,
      },
      module: { type: 'commonjs' },
    },
  ],
};

// ESM-only packages that CommonJS code under test requires (through @fastify/static; jose through
// @a2a-js/sdk, whose CommonJS build requires it).
const ESM_ONLY = ['content-disposition', 'jose'];
transform[`^.+/node_modules/(${ESM_ONLY.join('|')})/.+\\.js$`] = [
  '@swc/jest',
  { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } },
];

// PGlite's CommonJS build (the pgvector specs, docs/adr/0050) loads Node's builtins by dynamic
// `import()`, which Jest's VM refuses without --experimental-vm-modules: compiled to `require`.
const DYNAMIC_IMPORT = ['@electric-sql/pglite'];
transform[`^.+/node_modules/(${DYNAMIC_IMPORT.join('|')})/.+\\.cjs$`] = [
  '@swc/jest',
  { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } },
];

const common = {
  rootDir: __dirname,
  transform,
  transformIgnorePatterns: [`/node_modules/(?!(${[...ESM_ONLY, ...DYNAMIC_IMPORT].join('|')})/)`],
  moduleNameMapper,
  testEnvironment: 'node',
};
const ignore = ['/node_modules/', '/dist/'];

/** @type {import('jest').Config} */
const config = {
  // Test files run in a worker process that is replaced once it holds more than this after a file.
  // Without it, a machine with two cores runs every file in Jest's own process (one worker or less
  // means in band), and what the ~300 files leave behind (module registries kept alive by stray
  // references) grew it past Node's heap limit: a fresh-clone run died of OOM at file 232 (issue 33's
  // merge). Files still run one at a time on such a machine, as before.
  workerIdleMemoryLimit: '1GB',
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/{apps,libs}/**/*.spec.ts'],
      testPathIgnorePatterns: [...ignore, '\\.int\\.spec\\.ts$', '\\.e2e\\.spec\\.ts$'],
    },
    {
      ...common,
      displayName: 'integration',
      testEnvironment: '<rootDir>/libs/testing/src/test-environment.ts',
      setupFilesAfterEnv: ['<rootDir>/libs/testing/src/slow-setup.ts'],
      testMatch: ['<rootDir>/{apps,libs}/**/*.int.spec.ts'],
      testPathIgnorePatterns: ignore,
      globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
    },
    {
      ...common,
      displayName: 'e2e',
      testEnvironment: '<rootDir>/libs/testing/src/test-environment.ts',
      setupFilesAfterEnv: ['<rootDir>/libs/testing/src/slow-setup.ts'],
      testMatch: ['<rootDir>/{apps,libs}/**/*.e2e.spec.ts', '<rootDir>/test/**/*.e2e.spec.ts'],
      testPathIgnorePatterns: ignore,
      globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
    },
  ],
};

module.exports = config;
