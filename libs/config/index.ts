export * from './errors';
export * from './duration';
export * from './schema';
export * from './load';
