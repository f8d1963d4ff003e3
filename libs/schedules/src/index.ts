export * from './schedules';
export * from './schedules-repository';
