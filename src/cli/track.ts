/**
 * `starpo track <runId|sweepId> [--to tensorboard|mlflow|wandb] [--log-dir D] [--tracking-uri U]`: writes a run's
 * stored steps (or each started run's of a sweep) that its trackers lack, e.g. for a run that ended while
 * its tracker was down, or that ran without track_with. Only what is missing is written
 * (trackers/track_run.ts), so running it twice, or after the control worker caught up, writes nothing more.
 * For MLflow, a run that has ended (its Temporal status) also gets its report and its end.
 */
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { resolveEndpoints } from '../../infra/lifecycle';
import { runEnd } from '../activities/track';
import { type RunSpec, TRACKERS, type TrackEnd, type TrackerName } from '../contract';
import { runKey } from '../storage/keys';
import { ObjectStore } from '../storage/object_store';
import { type TrackReport, type TrackTarget, targetOf, targetsOf, trackRun } from '../trackers/track_run';
import { BadInputError } from './exit_codes';
import { isStoredSweep, loadRunSpec, loadSweepSpec, runIdArgument } from './known_run';
import { log } from './options';
import { runState } from './report';

interface TrackOptions {
  to?: TrackerName;
  logDir?: string;
  trackingUri?: string;
}

/** The targets for a run: --to, --log-dir and --tracking-uri over its config's track_with and tracker_kwargs. @throws BadInputError (exit 2) */
export function chooseTargets(spec: RunSpec, opts: TrackOptions): TrackTarget[] {
  const chosen = opts.to ? [targetOf(opts.to, spec.config)] : targetsOf(spec.config);
  if (chosen.length === 0)
    throw new BadInputError(
      `run ${spec.runId} has no track_with in its config; name a tracker with --to (allowed: ${TRACKERS.join(', ')})`,
    );
  const targets = chosen.map((t): TrackTarget => {
    if (t.tracker !== 'mlflow') return opts.logDir === undefined ? t : { ...t, logDir: resolve(opts.logDir) };
    return opts.trackingUri === undefined ? t : { ...t, trackingUri: opts.trackingUri };
  });
  if (targets.some((t) => t.tracker !== 'mlflow' && t.logDir === ''))
    throw new BadInputError(`run ${spec.runId} has no tracker_kwargs.log_dir in its config; give the folder with --log-dir`);
  return targets;
}

/** How a run ended, from its state line (runState), or null while it runs or when Temporal does not say. */
export function endOfState(state: string): TrackEnd | null {
  const status = /^COMPLETED/.test(state)
    ? 'FINISHED'
    : /^(FAILED|TIMED_OUT)/.test(state)
      ? 'FAILED'
      : /^(TERMINATED|CANCELED)/.test(state)
        ? 'KILLED'
        : null;
  return status === null ? null : { state, status };
}

/** One line per tracker of a run: what it wrote. */
export function describeTrack(runId: string, reports: TrackReport[]): string[] {
  return reports.map((r) => {
    const wrote = r.written.length === 0 ? 'nothing missing' : `wrote ${r.written.length} steps (${r.written[0]}..${r.written.at(-1)})`;
    return `${runId}: ${r.tracker} ${r.where}: ${wrote}; holds steps up to ${r.lastStep}`;
  });
}

/** Adds `track` to the program. */
export function registerTrackCommand(program: Command): void {
  program
    .command('track')
    .description(
      "write a finished run's metrics (or every run's of a sweep) to its trackers from the store: only the steps they lack (track_with and tracker_kwargs of the config, or --to, --log-dir, --tracking-uri); an ended run's MLflow run also gets its report",
    )
    .argument('<id>', 'a run id or a sweep id', runIdArgument)
    .addOption(new Option('--to <tracker>', 'the tracker (default: the config track_with)').choices([...TRACKERS]))
    .option(
      '--log-dir <dir>',
      'tensorboard, wandb: the folder of the event files or W&B run files (default: the config tracker_kwargs.log_dir)',
    )
    .option('--tracking-uri <url>', 'mlflow: the server (default: the config tracker_kwargs.tracking_uri, else MLFLOW_TRACKING_URI)')
    .action(async (id: string, opts: TrackOptions) => {
      const e = await resolveEndpoints({ start: false, log: (line) => console.error(line) });
      const store = new ObjectStore(e.s3);
      const runIds = (await isStoredSweep(store, id)) ? (await loadSweepSpec(store, id)).children.map((c) => c.run.runId) : [id];
      for (const runId of runIds) {
        if (runIds.length > 1 && !(await store.exists(runKey(runId)))) {
          log(`${runId}: not started, nothing to track`);
          continue;
        }
        const spec = await loadRunSpec(store, runId);
        const targets = chooseTargets(spec, opts);
        const ended = targets.some((t) => t.tracker === 'mlflow') ? endOfState(await runState(e, runId)) : null;
        const end = ended ? runEnd(store, ended, (line) => console.error(line)) : undefined;
        log(describeTrack(runId, await trackRun(store, runId, targets, end)).join('\n'));
      }
    });
}
