/**
 * Activity `rollout` (task queue "starpo-rollout"): plays one shard of env groups with a policy
 * checkpoint through the TrajEnvManager (rollout/manager.ts runGroups) and stores the trajectories as
 * jsonl.gz at a key that is a pure function of (run, step, split, shard) (docs/design.md). Env failures are
 * logged as warnings, counted in the metrics and the first one returned, never thrown (an env that cannot be
 * created is: EnvFailureError, not retried).
 */
import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { RolloutInput, RolloutOutput, Trajectory } from '../contract';
import { CONFIG_ERROR, type ShardRecord, shardRecordSchema } from '../contract';
import { backendInfo } from '../model/backend';
import { runGroups } from '../rollout/manager';
import { sumMetrics } from '../rollout/metrics';
import { generatingArgsOf } from '../rollout/plan';
import { modelPolicy } from '../rollout/policy';
import { CorruptObjectError, isUnusable } from '../storage/errors';
import { rolloutKey, rolloutRecordKey } from '../storage/keys';
import { takePolicy } from '../workflows/fallback';
import { readEvalSpec } from './eval';
import { type ActivityRuntime, heartbeat } from './runtime';
import { setWatchdogLimit } from './watchdog';

/**
 * The stored shard of `input` when its commit record names the same policy and its trajectories
 * verify; null otherwise (logging why a present record was not used).
 */
async function committedShard(
  rt: ActivityRuntime,
  input: RolloutInput,
): Promise<{ record: ShardRecord; trajectories: Trajectory[] } | null> {
  const key = rolloutRecordKey(input.runId, input.step, input.split, input.shard, input.eval);
  if (!(await rt.store.exists(key))) return null;
  try {
    const record = shardRecordSchema.safeParse(await rt.store.getJson(key));
    if (!record.success)
      throw new CorruptObjectError(
        key,
        'a shard record',
        `invalid JSON shape (${record.error.issues[0]?.message})`,
        'invalid shard record',
      );
    if (record.data.policy !== input.policy.sha256) return null;
    return { record: record.data, trajectories: await rt.store.getJsonlGz<Trajectory>(record.data.trajectories) };
  } catch (err) {
    if (!isUnusable(err)) throw err;
    log.warn(`${input.split} step ${input.step} shard ${input.shard}: stored shard not usable (${err.message}); playing it again`);
    return null;
  }
}

/**
 * Builds the rollout activity over a runtime.
 *
 * Idempotent: after the trajectories, a commit record (rolloutRecordKey: their reference with sha256, the
 * policy manifest's sha256, the pool's counts) is written. A retried or replayed rollout whose record
 * names the same policy and whose trajectories verify reuses the shard instead of playing it again;
 * otherwise it plays (same seeds, so the same bytes) and rewrites both.
 *
 * With `input.eval` (`starpo eval`) the config comes from the evaluation's eval.json and the shard and
 * its record are stored under runs/<run>/evals/<name>/ (storage/keys.ts rolloutKey).
 *
 * Asynchronous rollouts (`input.policyStep`, async_generation_ratio > 0; ROLL
 * roll/distributed/scheduler/rollout_scheduler.py, where each group remembers the step it was created
 * at): the shard of step N is played by the checkpoint of an earlier step; every trajectory records its
 * `staleness` (N - policyStep) and the commit record the policy's step and the staleness. A damaged
 * policy falls back to the newest complete checkpoint before policyStep.
 */
export function rolloutActivity(rt: ActivityRuntime) {
  return async function rollout(input: RolloutInput): Promise<RolloutOutput> {
    const started = performance.now();
    const groupScores = input.split === 'val';
    const seconds = () => (performance.now() - started) / 1000;
    const committed = await committedShard(rt, input);
    if (committed) {
      const { record, trajectories } = committed;
      return {
        trajectories: record.trajectories,
        metrics: sumMetrics(trajectories, { totals: record.totals, groupScores }),
        seconds: seconds(),
        ...(record.compute ? { compute: record.compute } : {}),
      };
    }
    const { config } = input.eval === undefined ? await rt.run(input.runId) : await readEvalSpec(rt, input.runId, input.eval);
    // rt.run sets the run's watchdog limit; an evaluation plays under its own config's (an older one without the key keeps the limit).
    if (input.eval !== undefined && config.watchdog_seconds !== undefined) setWatchdogLimit(config.watchdog_seconds);
    const manager = input.split === 'train' ? config.train_env_manager : config.val_env_manager;
    const generating = generatingArgsOf(config, input.split);
    const staleness = input.policyStep === undefined ? null : input.step - input.policyStep;
    if (staleness !== null && (!Number.isInteger(staleness) || staleness < 0)) {
      throw ApplicationFailure.nonRetryable(
        `rollout step ${input.step}: policyStep ${input.policyStep} must be an integer in 0..${input.step}`,
        CONFIG_ERROR,
      );
    }
    const checkpoint = await takePolicy(rt, input.runId, input.policyStep ?? input.step, input.policy);
    try {
      const played = await runGroups(input.groups, {
        policy: modelPolicy(checkpoint.model, checkpoint.tokenizer, generating),
        tokenizer: checkpoint.tokenizer,
        customEnvs: config.custom_envs,
        sequenceLength: config.sequence_length,
        maxNewTokens: generating.max_new_tokens,
        split: input.split,
        step: input.step,
        groupSize: manager.group_size,
        redundancy: manager.group_size_redundancy,
        onTurn: (turn, active) => heartbeat({ turn, active }),
      });
      const { stats, errors } = played;
      const trajectories = staleness === null ? played.trajectories : played.trajectories.map((t) => ({ ...t, staleness }));
      for (const error of errors) log.warn(`${input.split} step ${input.step} shard ${input.shard}: env failure: ${error}`);
      const ref = await rt.store.putJsonlGz(rolloutKey(input.runId, input.step, input.split, input.shard, input.eval), trajectories);
      const totals = {
        'env/failed_episodes': stats.failedEpisodes,
        'env/replaced_groups': stats.replacedGroups,
        'env/dropped_groups': stats.droppedGroups,
      };
      const compute = backendInfo();
      const record: ShardRecord = {
        trajectories: ref,
        policy: input.policy.sha256,
        totals,
        ...(staleness === null ? {} : { policyStep: input.policyStep, staleness }),
        compute,
      };
      await rt.store.putJson(rolloutRecordKey(input.runId, input.step, input.split, input.shard, input.eval), record);
      return {
        trajectories: ref,
        metrics: sumMetrics(trajectories, { totals, groupScores }),
        seconds: seconds(),
        compute,
        ...(errors.length > 0 ? { firstEnvError: errors[0] } : {}),
      };
    } finally {
      rt.keep(input.policy, checkpoint);
    }
  };
}
