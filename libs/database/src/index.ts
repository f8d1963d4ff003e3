export * from './journal';
export * from './prisma';
