export * from './client.ts';
export * from './errors.ts';
export type { components, operations, paths } from './schema.ts';
