export * from './token-crypto';
export * from './queries';
export * from './registry';
export * from './watch';
