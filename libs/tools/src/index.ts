export * from './builtins';
export * from './registry';
export * from './tool';
export * from './schema';
export * from './modules';
