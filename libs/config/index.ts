export * from './errors';
export * from './duration';
export * from './retention';
export * from './schema';
export * from './load';
