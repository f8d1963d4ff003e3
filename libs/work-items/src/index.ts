export * from './store';
export * from './tools';
export * from './projection';
export * from './activation';
export * from './lifecycle';
export * from './closure';
