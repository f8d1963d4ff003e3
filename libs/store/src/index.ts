export * from './sql';
export * from './turn-store';
export * from './approval-store';
export * from './admission-store';
export * from './hook-store';
export * from './control-store';
export * from './subagent-cost';
export * from './tenant-spend';
