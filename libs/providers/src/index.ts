export * from './anthropic';
export * from './errors';
export * from './openai-chat';
export * from './openai-responses';
export * from './pricing';
export * from './registry';
export * from './scripted';
export * from './types';
