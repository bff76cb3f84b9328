/** `recordSweep`: stores a sweep's definition at sweeps/<sweep>/sweep.json, where the report and `starpo resume` find it. */
import type { SweepInput, SweepSpec } from '../contract';
import { sweepKey } from '../storage/keys';
import type { ActivityRuntime } from './runtime';

export function recordSweepActivity(rt: ActivityRuntime) {
  return async function recordSweep(input: SweepInput): Promise<void> {
    // The spec alone: a resumed sweep's input also says what had ended and where each child continues.
    const { finished: _, ...spec } = input;
    const stored: SweepSpec = {
      ...spec,
      children: spec.children.map(({ run: { resumeFrom: __, ...run }, ...child }) => ({ ...child, run })),
    };
    await rt.store.putJson(sweepKey(spec.sweepId), stored);
  };
}
