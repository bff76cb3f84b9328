/**
 * The run record and the run-id rule. A RunSpec is what `starpo run-json` writes, what workflow
 * starpoTraining takes, what prepareRun stores as runs/<run>/run.json and what loadRun reads back. A
 * SweepSpec is the record of a sweep's runs (sweeps/<sweep>/sweep.json; the workflow is in sweep.ts).
 */
import { InvalidKeyPartError } from './errors';
import type { RunConfig } from './run_config';
import type { ObjectRef } from './store';

/** A name that becomes one part of an object key: 1-128 of [A-Za-z0-9._-], starting with a letter or digit. */
const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Whether `name` may be one part of an object key (run id, evaluation or warm-up name): KEY_NAME and no `..`. */
export function isKeyName(name: unknown): name is string {
  return typeof name === 'string' && KEY_NAME.test(name) && !name.includes('..');
}

/**
 * The run-id rule, the one every entry point applies (CLI arguments, run.json, the store's keys):
 * 1-128 chars of [A-Za-z0-9._-], starting with a letter or digit, no `..`.
 * @returns the run id unchanged. @throws InvalidKeyPartError naming the value.
 */
export function validateRunId(runId: string): string {
  if (!isKeyName(runId)) {
    throw new InvalidKeyPartError(
      `runId ${JSON.stringify(runId)} is invalid; allowed: 1-128 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit, without ".."`,
    );
  }
  return runId;
}

/** Validation success of one evaluation (val/env/success) at the step it ran. */
export interface ValidationPoint {
  step: number;
  success: number;
}

/** The run record (RunSpec): run.json, the workflow input of a new or restarted run, prepareRun's input. */
export interface RunSpec {
  /** Run id, also the workflow id (validateRunId). */
  runId: string;
  /** A short name for the config (file name without .yaml). */
  configName: string;
  /** The validated config, defaults applied (plain JSON). */
  config: RunConfig;
  /**
   * Workflow input only, never stored: continue from this checkpoint manifest instead of preparing the run
   * (`starpo resume`), with the validation curve of the run's earlier executions (read from its metrics),
   * so the run's curve stays whole.
   */
  resumeFrom?: { checkpoint: ObjectRef; step: number; validationCurve?: ValidationPoint[] };
}

/** One child run: its run spec (the config with its grid point and seed applied), grid point index and seed. */
export interface SweepChild {
  /** run.runId is the child's workflow id: `<sweepId>-seed<seed>`, or `<sweepId>-g<point>-seed<seed>` with a grid. */
  run: RunSpec;
  /** Index into SweepSpec.points. */
  point: number;
  seed: number;
}

/** A sweep's definition: sweeps/<sweepId>/sweep.json and the workflow input of a new sweep. */
export interface SweepSpec {
  /** Sweep id, also the workflow id (the run-id rule). */
  sweepId: string;
  /** The config file's name, without .yaml. */
  configName: string;
  /** The overrides every child shares (given after the config), in order. */
  overrides: string[];
  /** The grid: one key per `--grid key=v1,v2`, with its values in order; [] for seeds only. */
  grid: Array<{ key: string; values: string[] }>;
  /** Every combination of the grid's values (key -> value), first key slowest; [{}] without a grid. */
  points: Array<Record<string, string>>;
  /** The children's `seed` values. */
  seeds: number[];
  /** At most this many children run at once. */
  parallel: number;
  /** Seed-major (every point's first seed, then every point's second, ...): the start order. */
  children: SweepChild[];
}

/** The child run id for a grid point and seed (`point` null: a sweep without a grid). */
export function sweepChildId(sweepId: string, point: number | null, seed: number): string {
  return point === null ? `${sweepId}-seed${seed}` : `${sweepId}-g${point}-seed${seed}`;
}
