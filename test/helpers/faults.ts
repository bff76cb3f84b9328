/**
 * Fault injection for durability tests and bench/fault_injection.ts: SIGKILL a
 * worker process (rollout, update, control) or a server (Temporal dev server, S3 server) of a training
 * stack at seeded random moments of a run, start it again (servers on the same ports with the same
 * state folder: Temporal's SQLite file, the S3 data), and fingerprint the run's final checkpoint so
 * it can be compared with an undisturbed run of the same config and seed.
 */
import type { ChildProcess } from 'node:child_process';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { infraUp } from '../../infra/lifecycle';
import { isAlive, killNow } from '../../infra/process';
import { removeWeedSockets } from '../../infra/s3';
import { readState } from '../../infra/state';
import { runInputFromFile } from '../../src/cli/run_input';
import { spawnWorker, stopChild, type WorkerProcesses } from '../../src/cli/spawn_workers';
import type { ObjectRef, Progress, Role, RunSpec } from '../../src/contract';
import { progressQuery } from '../../src/contract';
import { readCheckpoint, readOptimizerFiles } from '../../src/storage/checkpoint';
import { type ObjectStore, sha256Hex } from '../../src/storage/object_store';
import { trainerStateOf } from '../../src/storage/policy_checkpoint';
import { Rng } from '../../src/util/rng';
import type { TestServers } from './servers';

/**
 * The workflow input of a short FrozenLake run: test/fixtures/tiny_frozen_lake.yaml with `steps`
 * updates, no validation, and identity reward normalization. The fixture's format-only warm-up scores
 * every episode of a group alike, so mean_std advantages are 0 and the weights would never move, which
 * would make comparing them trivial; identity advantages (the raw scores) move them at every update.
 */
export function shortRunInput(runId: string, steps: number): RunSpec {
  return runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', runId, [
    `max_steps=${steps}`,
    'eval_steps=0',
    'reward_normalization.method=identity',
  ]).input;
}

/** What can be killed: a worker role or a server. */
export const FAULT_TARGETS = ['rollout', 'update', 'control', 'temporal', 's3'] as const;
export type FaultTarget = (typeof FAULT_TARGETS)[number];

/**
 * One planned kill: which target, when, and how long it stays dead (seconds). When is either a gap in
 * seconds after the previous restart (or the run's start), or the first moment the run's `progress`
 * shows it at or past a step's phase: that one cannot miss a short run however fast the host is.
 */
export type Fault = { target: FaultTarget; downSeconds: number } & (
  | { afterSeconds: number }
  | { step: number; phase: 'rollout' | 'update' }
);

/** A kill that happened while the run was open: seconds since the run started, and the run's phase then (from the `progress` query, `?` when nothing answered). */
export type Kill = Fault & { atSeconds: number; seenPhase: string };

/**
 * A seeded plan for a run whose steps take `runSeconds` undisturbed: each target once, in random order,
 * each after a uniform random gap in [0, runSeconds / targets) from the previous restart (about half the
 * run in all, spread over it however long recoveries take; a run that ends sooner than its undisturbed
 * time suggests takes fewer kills, and runWithFaults says which), dead for 0.5-3 s. Same (seed, trial) =
 * same plan.
 */
export function faultPlan(seed: number, trial: number, runSeconds: number, targets: readonly FaultTarget[] = FAULT_TARGETS): Fault[] {
  const rng = new Rng(seed, 'faults', trial);
  return rng.shuffle([...targets]).map((target) => ({
    target,
    afterSeconds: (rng.next() * runSeconds) / targets.length,
    downSeconds: 0.5 + rng.next() * 2.5,
  }));
}

/** Kills and restarts the processes of a stack: its worker children and its servers (test servers with a state folder). */
export class CrashableStack {
  /**
   * @param servers servers started by startTestServers (not from the environment: they need a state folder).
   * @param workers worker children; a restarted worker replaces its entry, so `workers.stop()` stops it.
   */
  constructor(
    private readonly servers: TestServers,
    private readonly workers: WorkerProcesses,
    private readonly logDir: string,
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  /** SIGKILLs `target` and waits until it is gone. @throws Error when the stack has no such worker or no server state. */
  async crash(target: FaultTarget): Promise<void> {
    if (target === 'temporal' || target === 's3') {
      const state = readState(this.stateDir());
      const holder = target === 'temporal' ? state.temporal : state.s3;
      const rec = holder?.process;
      if (!rec) throw new Error(`no running ${target} server recorded in ${this.stateDir()}`);
      killNow([rec]);
      while (isAlive(rec)) await new Promise((r) => setTimeout(r, 50));
      if (state.s3 && target === 's3' && state.s3.kind === 'seaweedfs') removeWeedSockets(state.s3.ports);
    } else {
      const child = this.worker(target).child;
      child.kill('SIGKILL');
      await stopChild(child, 5);
    }
    this.log(`killed ${target}`);
  }

  /**
   * Starts a crashed target again: a worker as a new process; a server with its recorded ports and
   * state folder (infraUp restarts only what is dead), resolving once it is healthy.
   */
  async restart(target: FaultTarget): Promise<void> {
    if (target === 'temporal' || target === 's3') {
      const state = readState(this.stateDir());
      await infraUp({
        stateDir: this.stateDir(),
        temporalPort: state.temporal?.ports.grpc,
        uiPort: state.temporal?.ports.ui,
        s3Port: state.s3?.ports.s3,
      });
    } else {
      this.worker(target).child = spawnWorker(target, this.servers.endpoints, this.logDir, `-restart-${Date.now()}`);
    }
    this.log(`restarted ${target}`);
  }

  private stateDir(): string {
    if (!this.servers.stateDir)
      throw new Error('servers come from the environment (TEMPORAL_ADDRESS, S3_ENDPOINT): they cannot be killed here');
    return this.servers.stateDir;
  }

  private worker(role: Role): { role: Role; child: ChildProcess } {
    const entry = this.workers.children.find((c) => c.role === role);
    if (!entry) throw new Error(`the stack has no ${role} worker`);
    return entry;
  }
}

/** The workflow's status, or null while the Temporal server does not answer. */
async function statusOf(handle: WorkflowHandle): Promise<string | null> {
  try {
    return (await handle.describe()).status.name;
  } catch {
    return null;
  }
}

/** The workflow's progress, or null when no control worker or server answers within 2 s. */
async function progressOf(handle: WorkflowHandle): Promise<Progress | null> {
  const timeout = new Promise<null>((resolve) => setTimeout(() => resolve(null), 2000).unref());
  return Promise.race([handle.query(progressQuery).catch(() => null), timeout]);
}

/** The order of a step's phases, to tell whether a run is at or past one. */
const PHASE_ORDER: Progress['phase'][] = ['preparing', 'rollout', 'update', 'validation'];

/** Whether progress `p` is at or past `phase` of `step`. */
function reached(p: Progress, step: number, phase: Progress['phase']): boolean {
  return p.step > step || (p.step === step && PHASE_ORDER.indexOf(p.phase) >= PHASE_ORDER.indexOf(phase));
}

/** Waits until `fault` is due or the run closed; true when it is due. */
async function due(handle: WorkflowHandle, fault: Fault, open: () => Promise<string>): Promise<boolean> {
  const until = 'afterSeconds' in fault ? Date.now() + fault.afterSeconds * 1000 : 0;
  for (;;) {
    if ((await open()) !== 'RUNNING') return false;
    if ('afterSeconds' in fault) {
      if (Date.now() >= until) return true;
    } else {
      const p = await progressOf(handle);
      if (p && reached(p, fault.step, fault.phase)) return true;
    }
    await new Promise((r) => setTimeout(r, 'afterSeconds' in fault ? 250 : 100));
  }
}

/**
 * Follows the started run `runId`, applying `plan` in order (wait until the fault is due, kill, wait
 * downSeconds, restart) while the run is open, then waits for the run to close and returns its result (throws when it
 * failed) with the kills that happened.
 */
export async function runWithFaults<R>(
  client: Client,
  runId: string,
  stack: CrashableStack,
  plan: Fault[],
): Promise<{ result: R; kills: Kill[] }> {
  const handle = client.workflow.getHandle(runId);
  const started = Date.now();
  const open = async () => (await statusOf(handle)) ?? 'RUNNING';
  const kills: Kill[] = [];
  for (const fault of plan) {
    if (!(await due(handle, fault, open))) break;
    const p = await progressOf(handle);
    const atSeconds = (Date.now() - started) / 1000;
    await stack.crash(fault.target);
    await new Promise((r) => setTimeout(r, fault.downSeconds * 1000));
    await stack.restart(fault.target);
    kills.push({ ...fault, atSeconds, seenPhase: p ? `step ${p.step} ${p.phase}` : '?' });
  }
  while ((await open()) === 'RUNNING') await new Promise((r) => setTimeout(r, 500));
  return { result: (await handle.result()) as R, kills };
}

/**
 * What must be identical between two runs of the same config and seed: sha256 of the final
 * checkpoint's model.safetensors and optimizer.safetensors, and its trainer_state.json without the
 * time/* metrics (wall-clock seconds). Reads and verifies the checkpoint.
 */
export async function checkpointFingerprint(
  store: ObjectStore,
  manifest: ObjectRef,
): Promise<{ model: string; optimizer: string; trainerState: string }> {
  const { files } = await readCheckpoint(store, manifest);
  const optimizer = await readOptimizerFiles(store, manifest.key);
  const state = trainerStateOf(files);
  state.metrics = Object.fromEntries(Object.entries(state.metrics).filter(([k]) => !k.startsWith('time/')));
  return {
    // A LoRA run's checkpoint holds its adapters instead of full weights.
    model: sha256Hex((files['model.safetensors'] ?? files['adapter_model.safetensors']) as Uint8Array),
    optimizer: sha256Hex(optimizer['optimizer.safetensors'] as Uint8Array),
    trainerState: JSON.stringify(state),
  };
}
