/**
 * Activity `loadRun` (task queue "starpo-update"): the run spec stored at runs/<run>/run.json, so a
 * workflow run continued as new carries only the run id and its checkpoint, not the config.
 */
import { runKey } from '../storage/keys';
import { ConfigError } from '../contract';
import type { RunSpec } from '../contract';
import type { ActivityRuntime } from './runtime';

/** Builds the loadRun activity over a runtime. @throws ConfigError (non-retryable) when run.json is missing */
export function loadRunActivity(rt: ActivityRuntime) {
  return async function loadRun(runId: string): Promise<RunSpec> {
    if (!(await rt.store.exists(runKey(runId)))) throw new ConfigError(runKey(runId), ['missing: the run was never prepared or its folder was deleted']);
    return rt.run(runId);
  };
}
