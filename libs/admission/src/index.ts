export * from './admission';
export * from './turn-steering';
export * from './session-import';
export * from './experiments';
