export * from './journal';
export * from './prisma';
export * from './rows';
export * from './content-cipher';
