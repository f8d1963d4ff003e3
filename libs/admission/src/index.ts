export * from './admission';
