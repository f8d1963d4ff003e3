export * from './schedules';
