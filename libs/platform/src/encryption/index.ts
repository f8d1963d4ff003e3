export * from './sealed';
export * from './key-provider';
export * from './tenant-cipher';
