export * from './envelope';
export * from './key-provider';
export * from './tenant-cipher';
