export * from './errors';
export * from './client';
export * from './envelope';
export type { MultipartFile } from './post';
