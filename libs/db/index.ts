export * from './pool';
export * from './embedded';
export * from './migrate';
export * from './boss';
export * from './database';
export * from './boss-schema';
export * from './pool-mode';
export * from './advisory-lock';
