/**
 * The train rollouts of starpoTraining, synchronous or asynchronous (async_generation_ratio r): with
 * r > 0 the rollouts of steps k+1..k+r run on "starpo-rollout" while step k's update runs on
 * "starpo-update", so an uninterrupted run plays step s with the checkpoint of step max(s - r, 0).
 * Workflow code: deterministic, no I/O; only object references cross.
 */
import type { RolloutOutput } from '../contract/activities';
import type { RunConfig } from '../contract/run_config';
import type { ObjectRef } from '../contract/store';
import type { KnownPolicy } from '../contract/workflow';
import { planShards } from '../rollout/plan';
import { type ActivityProxies, activityProxies } from './proxies';

/** A step's rollouts in flight (or done) and the step of the checkpoint that plays them. */
interface Launched {
  policyStep: number;
  outs: Promise<RolloutOutput[]>;
}

/**
 * The train rollouts of one workflow run. With r = 0 the rollouts of step k are launched when step k
 * needs them, with the step's own checkpoint; with r > 0 ahead of time, with the newest checkpoint there
 * is. Follows ROLL's agentic_pipeline.py (with async_generation_ratio > 0 the train rollout scheduler is
 * not suspended during the update) and rollout_scheduler.py (GroupQueue.advance_step: r extra batches
 * at the first step with the step-0 weights; groups older than r steps are dropped by the update).
 */
export class TrainRollouts {
  /** async_generation_ratio: steps the rollouts may run ahead of the update (0: synchronous). */
  readonly ratio: number;
  private readonly launched = new Map<number, Launched>();
  private readonly policies = new Map<number, ObjectRef>();
  /** The rollout activities, with the run's heartbeat timeout. */
  private readonly activities: ActivityProxies['rollout'];

  /**
   * @param known the checkpoints a rollout may still use: the newest, and with r > 0 those carried over
   *   continueAsNew (StarpoContinuation.policies), so a continued run plays its steps with the
   *   checkpoints an uninterrupted run would have used (and reuses their committed shards)
   */
  constructor(
    private readonly runId: string,
    private readonly config: RunConfig,
    known: readonly KnownPolicy[],
  ) {
    this.ratio = config.async_generation_ratio;
    this.activities = activityProxies(config).rollout;
    for (const p of known) this.policies.set(p.step, p.checkpoint);
  }

  /** Records the checkpoint of step `step` (the newest) and forgets those older than any rollout may use. */
  addPolicy(step: number, checkpoint: ObjectRef): void {
    this.policies.set(step, checkpoint);
    for (const s of [...this.policies.keys()]) if (s < step - this.ratio) this.policies.delete(s);
  }

  /** The checkpoints a later rollout may still use, oldest first (what continueAsNew carries when r > 0). */
  known(): KnownPolicy[] {
    return [...this.policies.entries()].sort((a, b) => a[0] - b[0]).map(([step, checkpoint]) => ({ step, checkpoint }));
  }

  /** The outputs of step `step`'s rollouts (shard order): those launched ahead, or launched now. */
  take(step: number): Promise<RolloutOutput[]> {
    const launched = this.launched.get(step) ?? this.launch(step);
    this.launched.delete(step);
    return launched.outs;
  }

  /**
   * With r > 0: launches the rollouts of steps step+1..step+r (below `end`, max_steps) not launched yet.
   * Call once step `step`'s checkpoint is the newest, right before its update.
   */
  launchAhead(step: number, end: number): void {
    for (let s = step + 1; s <= step + this.ratio && s < end; s++) {
      if (!this.launched.has(s)) this.launched.set(s, this.launch(s));
    }
  }

  /**
   * After a fallback to the checkpoint of step `step`: drops the rollouts launched ahead and the
   * checkpoints of later steps (the replay writes them again).
   */
  reset(step: number, checkpoint: ObjectRef): void {
    this.launched.clear();
    for (const s of [...this.policies.keys()]) if (s > step) this.policies.delete(s);
    this.addPolicy(step, checkpoint);
  }

  /** Waits until every launched rollout has ended (their shards committed or failed), e.g. before continueAsNew. */
  async settle(): Promise<void> {
    await Promise.all(
      [...this.launched.values()].map((l) =>
        l.outs.then(
          () => undefined,
          () => undefined,
        ),
      ),
    );
  }

  /**
   * The checkpoint step that plays step `step`: the oldest known one in [step - r, step], which is
   * max(step - r, 0) in an uninterrupted run and the newest when a run restarted from latest.json.
   */
  private policyFor(step: number): number {
    const usable = [...this.policies.keys()].filter((s) => s >= step - this.ratio && s <= step);
    if (usable.length === 0) throw new Error(`step ${step}: no known checkpoint in steps ${step - this.ratio}..${step}`);
    return Math.min(...usable);
  }

  private launch(step: number): Launched {
    const policyStep = this.policyFor(step);
    const policy = this.policies.get(policyStep)!;
    const shards = planShards(this.config, 'train', step);
    const ahead = this.ratio > 0;
    const outs = Promise.all(
      shards.map((groups, shard) =>
        this.activities.rollout.executeWithOptions(
          { summary: `rollout step ${step} shard ${shard + 1}/${shards.length}${ahead ? ` (policy of step ${policyStep})` : ''}` },
          [{ runId: this.runId, step, split: 'train', shard, policy, ...(ahead ? { policyStep } : {}), groups }],
        ),
      ),
    );
    // take() hands the promise to the loop; one dropped by reset() must not count as an unhandled rejection.
    outs.catch(() => undefined);
    return { policyStep, outs };
  }
}
