// `@electric-sql/pglite/vector` is a subpath export, which this repo's `moduleResolution: node` does
// not read; its type, for the pgvector specs and the recall benchmark (docs/adr/0050).
declare module '@electric-sql/pglite/vector' {
  import type { Extension } from '@electric-sql/pglite';
  export const vector: Extension;
}
