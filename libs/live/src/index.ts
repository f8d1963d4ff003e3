export * from './channel';
export * from './publisher';
export * from './subscriber';
export * from './control';
export * from './processes';
