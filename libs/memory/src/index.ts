// Agent memory on Postgres full-text search (issue 13, docs/adr/0022): the store, the memory tools and recall.
export * from './types';
export * from './cjk';
export * from './snippet';
export * from './source-ref';
export * from './store';
export * from './tools';
export * from './recall';
// The seed's two loads: episodic recall and the context pack's facts and preferences (docs/adr/0052).
export * from './context-pack';
// Memory blocks (issue 33, docs/adr/0051): core memory always in the system prompt.
export * from './blocks';
export * from './block-tools';
export * from './vectors';
export * from './search';
export * from './embed-job';
export * from './embed-spend';
export * from './pgvector';
