export * from './admission';
export * from './turn-control';
export * from './session-import';
