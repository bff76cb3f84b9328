/** `recordSweep`: stores a sweep's definition at sweeps/<sweep>/sweep.json, where the report and `starpo resume` find it. */
import type { SweepSpec } from '../contract';
import { sweepKey } from '../storage/keys';
import type { ActivityRuntime } from './runtime';

export function recordSweepActivity(rt: ActivityRuntime) {
  return async function recordSweep(spec: SweepSpec): Promise<void> {
    // The spec alone: a resumed sweep's input also says what had ended and where each child continues.
    const { sweepId, configName, overrides, grid, points, seeds, parallel, children } = spec;
    const stored: SweepSpec = {
      sweepId,
      configName,
      overrides,
      grid,
      points,
      seeds,
      parallel,
      children: children.map(({ run: { resumeFrom: _, ...run }, point, seed }) => ({ run, point, seed })),
    };
    await rt.store.putJson(sweepKey(sweepId), stored);
  };
}
