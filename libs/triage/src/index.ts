export * from './rules';
export * from './triage';
