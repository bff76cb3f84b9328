/**
 * Terminal rendering of a step's groups for `starpo trajectories`: a table of every group, then the
 * best and worst group turn by turn (each turn's observation, e.g. the FrozenLake grid, the raw
 * response, the parsed action and the reward; per trajectory the episode score, normalised score and
 * advantage), side by side when the terminal is wide enough, else one after the other; and the number
 * formats the HTML report shares. Pure.
 */
import type { ShownGroup, ShownStep, ShownTrajectory } from './groups';

/** Narrowest column of a side-by-side layout (characters). */
export const MIN_COLUMN = 48;
const GAP = ' │ ';

/** A number with 3 decimals, or "-" for null. */
export const fmt = (x: number | null | undefined): string => (x === null || x === undefined ? '-' : x.toFixed(3));

/** Sorted, de-duplicated integers as comma-separated runs ("0-3, 5"); "none" when empty. */
export function integerRanges(values: Iterable<number>): string {
  const xs = [...new Set(values)].sort((a, b) => a - b);
  if (xs.length === 0) return 'none';
  const parts: string[] = [];
  let start = xs[0];
  let prev = xs[0];
  for (const x of [...xs.slice(1), Number.NaN]) {
    if (x === prev + 1) {
      prev = x;
      continue;
    }
    parts.push(start === prev ? String(start) : `${start}-${prev}`);
    start = prev = x;
  }
  return parts.join(', ');
}

/**
 * Wraps a line to `width` characters, at the last space of a piece when it has one in its second half,
 * else hard; continuation lines are indented by 4.
 */
function wrap(line: string, width: number): string[] {
  const out: string[] = [];
  let rest = [...line];
  let room = width;
  while (rest.length > room) {
    const space = rest.lastIndexOf(' ', room);
    const cut = space > room / 2 ? space : room;
    out.push(`${out.length > 0 ? '    ' : ''}${rest.slice(0, cut).join('')}`);
    rest = rest.slice(space > room / 2 ? cut + 1 : cut);
    room = width - 4;
  }
  out.push(`${out.length > 0 ? '    ' : ''}${rest.join('')}`);
  return out;
}

/** "kept by the filter" / "filtered out" / "not recorded". */
function keptText(kept: boolean | null): string {
  return kept === null ? 'no update scores' : kept ? 'kept by the filter' : 'filtered out (not trained on)';
}

/** The lines of one trajectory: its scores, then each turn. */
function trajectoryLines(t: ShownTrajectory): string[] {
  const lines = [
    `── env ${t.envId} · episode score ${fmt(t.episodeScore)} · ${t.outcome}`,
    `   normalised score ${fmt(t.score?.normalizedScore)} · advantage ${fmt(t.score?.advantage)}`,
  ];
  t.turns.forEach((turn, i) => {
    const action =
      turn.action === null ? 'no action (did not parse)' : `action ${turn.action}${turn.actionIsEffective ? '' : ' (no effect)'}`;
    lines.push(`turn ${i + 1} · reward ${fmt(turn.reward)} · ${action}`);
    for (const row of turn.observation.split('\n')) lines.push(`  ${row}`);
    lines.push(`  response: ${JSON.stringify(turn.response)}`);
  });
  return lines;
}

/** The lines of one group under a label (e.g. "best group"), wrapped to `width`. */
export function groupLines(label: string, g: ShownGroup, width: number): string[] {
  const lines = [
    `${label} ${g.id} (tag ${g.tag}, seed ${g.seed})`,
    `mean score ${fmt(g.meanScore)} · success ${g.trajectories.filter((t) => t.success).length}/${g.trajectories.length} · ${keptText(g.kept)}`,
    ...g.trajectories.flatMap(trajectoryLines),
  ];
  return lines.flatMap((l) => wrap(l, width));
}

/** Two columns of lines next to each other, the left padded to `width`. */
function sideBySide(left: string[], right: string[], width: number): string[] {
  const n = Math.max(left.length, right.length);
  return Array.from({ length: n }, (_, i) => `${(left[i] ?? '').padEnd(width)}${GAP}${right[i] ?? ''}`.trimEnd());
}

/** One line per group: id, tag, seed, mean score, successes, filter. */
function groupTable(s: ShownStep): string[] {
  const idWidth = Math.max(5, ...s.groups.map((g) => g.id.length));
  const head = `${'group'.padEnd(idWidth)}  ${'mean score'.padStart(10)}  success  filter`;
  return [
    head,
    ...s.groups.map((g) => {
      const mark = g.id === s.best ? '  (best)' : g.id === s.worst ? '  (worst)' : '';
      const filter = g.kept === null ? '-' : g.kept ? 'kept' : 'dropped';
      return `${g.id.padEnd(idWidth)}  ${fmt(g.meanScore).padStart(10)}  ${`${g.trajectories.filter((t) => t.success).length}/${g.trajectories.length}`.padStart(7)}  ${filter}${mark}`;
    }),
  ];
}

/**
 * The text `starpo trajectories` prints.
 * @param header first line (run id, step, split, filters)
 * @param width terminal width in characters; two groups go side by side when each gets >= MIN_COLUMN
 * @param group show only this group (one of s.groups' ids) instead of the best and the worst
 */
export function formatStep(s: ShownStep, opts: { header: string; width: number; group?: string }): string {
  const out = [opts.header];
  if (s.skipReason) out.push(`update skipped: ${s.skipReason}`);
  const find = (id: string) => s.groups.find((g) => g.id === id) as ShownGroup;
  if (opts.group !== undefined) {
    out.push('', ...groupLines('group', find(opts.group), opts.width));
    return out.join('\n');
  }
  out.push('', ...groupTable(s), '');
  if (s.best === s.worst) {
    out.push(...groupLines('best and worst group', find(s.best), opts.width));
    return out.join('\n');
  }
  const column = Math.floor((opts.width - GAP.length) / 2);
  if (column >= MIN_COLUMN) {
    out.push(...sideBySide(groupLines('best group', find(s.best), column), groupLines('worst group', find(s.worst), column), column));
  } else {
    out.push(...groupLines('best group', find(s.best), opts.width), '', ...groupLines('worst group', find(s.worst), opts.width));
  }
  return out.join('\n');
}
