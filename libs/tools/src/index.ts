export * from './builtins';
export * from './addresses';
export * from './http-fetch';
export * from './registry';
export * from './tool';
export * from './schema';
export * from './modules';
