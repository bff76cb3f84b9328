/**
 * The object store: key layout, verified reads and writes, checkpoints with manifests
 * (DESIGN.md, "Object store layout").
 */
export * from './keys';
export * from './errors';
export * from './object_store';
export * from './manifest';
