export * from './api';
export * from './envelope';
export * from './errors';
export * from './events';
export * from './ids';
export * from './jobs';
export * from './text';
export * from './responses';
