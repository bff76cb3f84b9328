/**
 * `starpo track <runId|sweepId> [--to tensorboard] [--log-dir D]`: writes a run's stored steps (or each
 * started run's of a sweep) that its trackers lack, e.g. for a run that ended while its tracker was down,
 * or that ran without track_with. Only what is missing is written (trackers/track_run.ts), so running it
 * twice, or after the control worker caught up, writes nothing more.
 */
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { resolveEndpoints } from '../../infra/lifecycle';
import { type RunSpec, TRACKERS, type TrackerName } from '../contract';
import { runKey } from '../storage/keys';
import { ObjectStore } from '../storage/object_store';
import { type TrackReport, type TrackTarget, targetsOf, trackRun } from '../trackers/track_run';
import { BadInputError } from './exit_codes';
import { isStoredSweep, loadRunSpec, loadSweepSpec, runIdArgument } from './known_run';
import { log } from './options';

interface TrackOptions {
  to?: TrackerName;
  logDir?: string;
}

/** The targets for a run: --to and --log-dir over its config's track_with and tracker_kwargs. @throws BadInputError (exit 2) */
export function chooseTargets(spec: RunSpec, opts: TrackOptions): TrackTarget[] {
  const logDir = opts.logDir === undefined ? undefined : resolve(opts.logDir);
  const targets = opts.to
    ? [{ tracker: opts.to, logDir: logDir ?? spec.config.tracker_kwargs?.log_dir ?? '' }]
    : targetsOf(spec.config).map((t) => ({ ...t, logDir: logDir ?? t.logDir }));
  if (targets.length === 0)
    throw new BadInputError(
      `run ${spec.runId} has no track_with in its config; name a tracker with --to (allowed: ${TRACKERS.join(', ')})`,
    );
  const missing = targets.find((t) => t.logDir === '');
  if (missing) throw new BadInputError(`run ${spec.runId} has no tracker_kwargs.log_dir in its config; give the folder with --log-dir`);
  return targets;
}

/** One line per tracker of a run: what it wrote. */
export function describeTrack(runId: string, reports: TrackReport[]): string[] {
  return reports.map((r) => {
    const wrote = r.written.length === 0 ? 'nothing missing' : `wrote ${r.written.length} steps (${r.written[0]}..${r.written.at(-1)})`;
    return `${runId}: ${r.tracker} ${r.dir}: ${wrote}; holds steps up to ${r.lastStep}`;
  });
}

/** Adds `track` to the program. */
export function registerTrackCommand(program: Command): void {
  program
    .command('track')
    .description(
      "write a finished run's metrics (or every run's of a sweep) to its trackers from the store: only the steps they lack (track_with and tracker_kwargs of the config, or --to and --log-dir)",
    )
    .argument('<id>', 'a run id or a sweep id', runIdArgument)
    .addOption(new Option('--to <tracker>', 'the tracker (default: the config track_with)').choices([...TRACKERS]))
    .option('--log-dir <dir>', 'tensorboard: the folder of the event files (default: the config tracker_kwargs.log_dir)')
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
        log(describeTrack(runId, await trackRun(store, runId, chooseTargets(spec, opts))).join('\n'));
      }
    });
}
