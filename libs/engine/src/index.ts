export * from './engine';
export * from './types';
export * from './waves';
export * from './stop-hooks';
export * from './no-progress';
export * from './context';
export * from './failures';
export * from './gates';
