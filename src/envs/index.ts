/** Public surface of src/envs (SPEC.md §4, §8). */
export * from './types';
export * from './parse';
export * from './frozen_lake_map';
export * from './frozen_lake';
export * from './bandit';
export * from './registry';
