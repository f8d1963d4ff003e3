export * from './rules';
export * from './triage';
export * from './decide';
export * from './outbound';
export * from './wake';
