export * from './rules';
export * from './triage';
export * from './decide';
export * from './outbound';
export * from './wake';
export * from './triggers-repository';
export * from './deliveries-repository';
