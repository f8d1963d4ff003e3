// Sub-agents as child turns tracked by tasks, and the built-in archetypes (issue 11).
export * from './archetypes';
export * from './tiers';
export * from './tasks';
export * from './tools';
export * from './budget';
export * from './agents-repository';
export * from './agent-versions';
export * from './canary';
