export * from './sql';
export * from './turn-store';
