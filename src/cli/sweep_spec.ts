/**
 * A sweep's definition from a YAML config, `--seeds N`, `--grid key=v1,v2 ...` and `--parallel K`: every
 * child's config is loaded and validated here, before anything starts, with its grid point's overrides and
 * its seed (the config's `seed`, then the next N-1 integers, so the first seed's child is the run
 * `starpo train` makes of the same config).
 */
import { InvalidArgumentError } from 'commander';
import { COMMAND_LINE, parseOverrides } from '../config/overrides';
import { ConfigError, InvalidKeyPartError, type SweepChild, type SweepSpec, sweepChildId, validateRunId } from '../contract';
import { loadConfigFile } from '../preflight/load';
import { newRunId, runInputFromFile } from './run_input';

/** `n` and the noun, plural when n is not 1: "1 grid point", "4 grid points". */
export function countOf(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** A sweep's shape, e.g. "12 runs, 4 grid points x 3 seeds" or "1 run, 1 grid point x 1 seed". */
export function sweepShape(spec: Pick<SweepSpec, 'children' | 'points' | 'seeds'>): string {
  return `${countOf(spec.children.length, 'run')}, ${countOf(spec.points.length, 'grid point')} x ${countOf(spec.seeds.length, 'seed')}`;
}

/** One `--grid` flag: a config key and the values it takes. */
export interface GridAxis {
  key: string;
  values: string[];
}

/**
 * Commander parser of `--grid key=v1,v2` (repeatable: `previous` holds the earlier flags). A usage error
 * (exit 2) names the value and the form allowed.
 */
export function gridArgument(value: string, previous: GridAxis[] = []): GridAxis[] {
  const eq = value.indexOf('=');
  const key = eq > 0 ? value.slice(0, eq).trim() : '';
  const values = eq > 0 ? value.slice(eq + 1).split(',') : [];
  if (!key || values.length === 0 || values.some((v) => v.trim() === '')) {
    throw new InvalidArgumentError(
      `${JSON.stringify(value)} is not a grid axis; allowed: key=v1,v2,... (a config key and non-empty values)`,
    );
  }
  if (key.replace(/^\+{1,2}/, '') === 'seed') throw new InvalidArgumentError('the seed is not a grid axis; use --seeds N');
  if (previous.some((a) => a.key === key)) throw new InvalidArgumentError(`grid key ${JSON.stringify(key)} is given twice`);
  const trimmed = values.map((v) => v.trim());
  const twice = trimmed.find((v, i) => trimmed.indexOf(v) !== i);
  if (twice !== undefined) throw new InvalidArgumentError(`grid key ${JSON.stringify(key)} lists ${JSON.stringify(twice)} twice`);
  return [...previous, { key, values: trimmed }];
}

/** Every combination of the axes' values (first axis slowest); [{}] without axes. */
export function gridPoints(grid: readonly GridAxis[]): Array<Record<string, string>> {
  return grid.reduce<Array<Record<string, string>>>(
    (points, axis) => points.flatMap((p) => axis.values.map((v) => ({ ...p, [axis.key]: v }))),
    [{}],
  );
}

/** What a sweep is made of, besides the config file and its overrides. */
export interface SweepOptions {
  seeds: number;
  grid: GridAxis[];
  parallel: number;
  sweepId?: string;
}

/**
 * The SweepSpec of a config file: one child per (grid point, seed), seed-major, each config validated.
 * @throws ConfigError (exit 2) naming the file, grid point or seed whose config is invalid, or --sweep-id
 *   when the sweep id (or a child id made from it) breaks the run-id rule
 */
export function sweepSpecFromFile(path: string, overrides: readonly string[], opts: SweepOptions): SweepSpec {
  // A grid point's override comes after the command line's, so the same key there would be dropped unseen.
  const gridKeys = new Set(opts.grid.map((a) => a.key.replace(/^\+{1,2}/, '')));
  const both = parseOverrides(overrides).filter((o) => gridKeys.has(o.path.join('.')));
  if (both.length > 0) {
    throw new ConfigError(
      COMMAND_LINE,
      both.map((o) => `\`${o.arg}\`: its key is also a --grid axis, whose values would replace it; give the key one way`),
    );
  }
  const { config: base } = loadConfigFile(path, overrides);
  const { input: first } = runInputFromFile(path, undefined, overrides);
  const sweepId = opts.sweepId ?? newRunId(`${first.configName}-sweep`);
  const points = gridPoints(opts.grid);
  const seeds = Array.from({ length: opts.seeds }, (_, i) => base.seed + i);
  const children: SweepChild[] = [];
  for (const seed of seeds) {
    points.forEach((point, p) => {
      const runId = sweepChildId(sweepId, opts.grid.length > 0 ? p : null, seed);
      try {
        validateRunId(runId);
      } catch (err) {
        if (err instanceof InvalidKeyPartError) throw new ConfigError('--sweep-id', [`child run id: ${err.message}`]);
        throw err;
      }
      const pointOverrides = Object.entries(point).map(([k, v]) => `${k}=${v}`);
      let run: SweepChild['run'];
      try {
        run = runInputFromFile(path, runId, [...overrides, ...pointOverrides, `seed=${seed}`]).input;
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        const at = [pointOverrides.join(' '), `seed=${seed}`].filter(Boolean).join(' ');
        throw new ConfigError(`${path} at grid point ${at}`, err.problems);
      }
      children.push({ run, point: p, seed });
    });
  }
  return {
    sweepId,
    configName: first.configName,
    overrides: [...overrides],
    grid: opts.grid,
    points,
    seeds,
    parallel: opts.parallel,
    children,
  };
}
