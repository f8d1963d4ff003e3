export * from './env';
export * from './fake-llm-server';
export * from './processes';
export * from './services';
export * from './wait';
export * from './seed';
export * from './tcp-proxy';
export * from './pool-counter';
