export * from './originals';
export * from './retrieve-tool';
