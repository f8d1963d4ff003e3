export * from './completion-webhook';
export * from './cost-log';
export * from './registry';
