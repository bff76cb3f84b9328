/**
 * The contract: every type and name that crosses a process or Temporal boundary. It imports nothing of
 * starpo. Workflow code imports the files it needs directly (not this index), so its bundle does not
 * carry the config schema.
 */
export * from './activities';
export * from './enums';
export * from './errors';
export * from './ignored';
export * from './liveness';
export * from './model_args';
export * from './nearest';
export * from './run';
export * from './run_config';
export * from './run_config_blocks';
export * from './store';
export * from './sweep';
export * from './trajectory';
export * from './trajectory_scores';
export * from './workflow';
