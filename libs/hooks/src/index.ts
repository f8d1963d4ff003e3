export * from './cost-log';
export * from './registry';
