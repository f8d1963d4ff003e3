export * from './cost-log';
