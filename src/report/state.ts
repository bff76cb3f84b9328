/**
 * The run's state line of the report summary, from `starpo status`'s RunStatus (cli/operate.ts: the
 * workflow's Temporal status and its `progress` query), e.g. `RUNNING: in warm-up, step 0 of 6`. Pure.
 */
import type { Progress, RunStatus } from '../contract';

/** What a running workflow is doing in each phase of its `progress` query. */
const PHASES: Record<Progress['phase'], string> = {
  preparing: 'in warm-up (preparing the step-0 policy)',
  rollout: 'rollouts',
  update: 'update',
  validation: 'validation',
  paused: 'paused (see starpo unpause)',
  done: 'finishing',
};

/** The state line of a run; `unknown: <why>` when Temporal could not be asked (status null). */
export function runStateText(status: RunStatus | null, why = 'the Temporal server was not asked'): string {
  if (!status) return `unknown: ${why}`;
  if (status.status === 'RUNNING') {
    const p = status.progress;
    if (!p) return `RUNNING, step ${status.step ?? '?'} done${status.note ? ` (${status.note})` : ''}`;
    return `RUNNING: ${PHASES[p.phase]}, step ${p.step} of ${p.maxSteps} done${p.stopRequested ? `, stopping (${p.stopRequested})` : ''}`;
  }
  if (status.status === 'COMPLETED' && status.result) {
    return `COMPLETED after ${status.result.steps} steps${status.result.stoppedBy ? `, stopped by ${status.result.stoppedBy}` : ''}`;
  }
  return `${status.status}${status.failure ? `: ${status.failure}` : ''}`;
}
