export * from './archivist';
export * from './archivist-snapshot';
export * from './completion-webhook';
export * from './cost-log';
export * from './episodic';
export * from './learning';
export * from './reconcile';
export * from './registry';
