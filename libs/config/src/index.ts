export * from './config';
export * from './docs';
