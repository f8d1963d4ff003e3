export * from './infra.module';
export * from './nest-logger';
export * from './tokens';
export * from './worker';
export * from './process';
export * from './providers';
export * from './secret-box';
export * from './rate-limits';
