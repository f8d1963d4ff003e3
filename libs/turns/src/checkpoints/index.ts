export * from './postgres-checkpoints';
export * from './signals';
export * from './writes';
