/**
 * `starpo trajectories <runId> --step N [--tag T] [--group G] [--split train|val]`: a step's env groups
 * from the object store, the best and worst turn by turn in the terminal (src/report/text.ts), under
 * a legend of the grid symbols (src/report/groups.ts).
 * A step, tag or group that the run does not have is bad input (exit 2) naming the value and the
 * available ones.
 */

import { gridLegends, groupStep } from '../report/groups';
import { loadScores, loadTrajectories, rolloutIndex } from '../report/run_data';
import { formatStep, integerRanges } from '../report/text';
import type { ObjectStore } from '../storage/object_store';
import { BadInputError } from './exit_codes';
import { loadRunSpec } from './known_run';

/** What to show. */
export interface TrajectoriesOptions {
  step: number;
  split: 'train' | 'val';
  /** Only groups of this env tag. */
  tag?: string;
  /** One group: its group id (number) or trajGroupId. */
  group?: string;
  /** Terminal width in characters. */
  width: number;
  /** Where warnings go (damaged score files). */
  warn: (line: string) => void;
}

/**
 * The text of `starpo trajectories`.
 * @throws BadInputError for an unknown run, or a step / tag / group the run does not have (naming the
 *   available ones); CorruptObjectError when a trajectory shard is damaged
 */
export async function trajectoriesText(store: ObjectStore, runId: string, opts: TrajectoriesOptions): Promise<string> {
  const spec = await loadRunSpec(store, runId);
  const index = (await rolloutIndex(store, runId))[opts.split];
  const shards = index.get(opts.step);
  if (!shards)
    throw new BadInputError(
      `--step ${opts.step}: run ${runId} has no ${opts.split} rollouts at step ${opts.step}; available steps: ${integerRanges(index.keys())}`,
    );
  let trajectories = await loadTrajectories(store, runId, opts.step, opts.split, shards);
  const tags = [...new Set(trajectories.map((t) => t.tag))];
  if (opts.tag !== undefined) {
    if (!tags.includes(opts.tag))
      throw new BadInputError(
        `--tag ${JSON.stringify(opts.tag)}: no ${opts.split} groups of that tag at step ${opts.step}; available tags: ${tags.join(', ')}`,
      );
    trajectories = trajectories.filter((t) => t.tag === opts.tag);
  }
  const scores = opts.split === 'train' ? await loadScores(store, runId, opts.step, opts.warn) : null;
  const shown = groupStep(opts.step, trajectories, scores);
  let group: string | undefined;
  if (opts.group !== undefined) {
    const match = shown.groups.find((g) => g.id === opts.group || String(g.groupId) === opts.group);
    if (!match) {
      const available = shown.groups.map((g) => `${g.groupId} (${g.id})`).join(', ');
      throw new BadInputError(
        `--group ${JSON.stringify(opts.group)}: no such ${opts.split} group at step ${opts.step}${opts.tag ? ` with tag ${opts.tag}` : ''}; available groups: ${available}`,
      );
    }
    group = match.id;
  }
  const header =
    `run ${runId} · step ${opts.step} · ${opts.split} · ${shown.groups.length} groups, ${trajectories.length} trajectories` +
    `${opts.tag ? ` · tag ${opts.tag}` : ''}${scores ? '' : opts.split === 'train' ? ' · update scores not recorded' : ''}`;
  const legends = gridLegends(
    spec.config,
    shown.groups.map((g) => g.tag),
  ).map((line) => `grid symbols: ${line}`);
  return formatStep(shown, { header: [header, ...legends].join('\n'), width: opts.width, group });
}
