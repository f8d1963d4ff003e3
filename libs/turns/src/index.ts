export * from './lease';
export * from './reconciler';
export * from './runner';
export * from './transcript';
export * from './turn-job';
export * from './approvals';
