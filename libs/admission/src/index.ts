export * from './admission';
export * from './turn-control';
