export * from './queue';
export * from './redis';
