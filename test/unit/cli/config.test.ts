/** `starpo config check|print <file> [overrides...]` as a user runs them. */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { parse } from 'yaml';

const starpo = (...args: string[]) => spawnSync(process.execPath, ['bin/starpo.js', ...args], { encoding: 'utf8' });

test('config check prints ok, the ignored keys and the interpolation variables once', () => {
  const r = starpo('config', 'check', 'configs/examples/agent_val_frozen_lake.yaml');
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines[0], 'configs/examples/agent_val_frozen_lake.yaml: ok');
  assert.match(lines[1], /^warning: `exp_name` \("agentic_pipeline"\) is ignored: a run is named by its run id/);
  assert.match(lines[2], /^ignored \(accepted for ROLL compatibility, not used\): output_dir, /);
  assert.match(lines[3], /^interpolation variables from configs\/config\/traj_envs\.yaml: action_pattern, /);
  assert.equal(lines.length, 4);
});

test('config print applies defaults, interpolation and overrides', () => {
  const r = starpo('config', 'print', 'configs/examples/agent_val_frozen_lake.yaml', 'max_tokens_per_step=32', '++seed=7');
  assert.equal(r.status, 0, r.stderr);
  const printed = parse(r.stdout) as Record<string, any>;
  assert.equal(printed.seed, 7);
  assert.equal(printed.custom_envs.FrozenLake.max_tokens_per_step, 32);
  assert.equal(printed.max_tokens_per_step, undefined, 'interpolation variables are dropped');
  assert.equal(printed.init_kl_coef, 0);
  assert.equal(printed.actor_infer.training_args, undefined, 'blocks a role does not use are not filled in');
  const notes = r.stderr.trim().split('\n');
  assert.match(notes[0], /^warning: `exp_name` \("agentic_pipeline"\) is ignored: /);
  assert.match(notes[1], /^ignored \(accepted for ROLL compatibility, not used\): output_dir, /);
  assert.equal(printed.track_with, 'tensorboard');
  assert.match(
    printed.tracker_kwargs.log_dir,
    /\/configs\/examples\/output\/tensorboard\/agentic_frozen_lake$/,
    'relative to the config file',
  );
  assert.match(notes[2], /^interpolation variables from configs\/config\/traj_envs\.yaml: action_pattern, /);
  assert.equal(notes.length, 3);
});

test('a tracker starpo does not write, or tensorboard without log_dir, exits 2 naming the key, the value and what is allowed', () => {
  const wandb = starpo('config', 'check', 'configs/frozen_lake.yaml', '+track_with=wandb');
  assert.equal(wandb.status, 2);
  assert.match(
    wandb.stderr,
    /`track_with` .*: allowed: tensorboard, a non-empty list of them, or null \(ROLL's wandb, swanlab and stdout are not implemented\) \(got "wandb"\)/,
  );
  const list = starpo('config', 'check', 'configs/frozen_lake.yaml', '+track_with=[tensorboard,mlflow]');
  assert.equal(list.status, 2);
  assert.match(list.stderr, /\(got \["tensorboard","mlflow"\]\)/);
  const noDir = starpo('config', 'check', 'configs/frozen_lake.yaml', '+track_with=[tensorboard]');
  assert.equal(noDir.status, 2);
  assert.match(noDir.stderr, /`tracker_kwargs.log_dir`: missing; `track_with: tensorboard` needs it/);
  const other = starpo('config', 'check', 'configs/frozen_lake.yaml', '+track_with=tensorboard', '+tracker_kwargs.project=x');
  assert.equal(other.status, 2);
  assert.match(other.stderr, /unknown key `tracker_kwargs.project`.*allowed under `tracker_kwargs`: log_dir/);
  const ok = starpo('config', 'print', 'configs/frozen_lake.yaml', '+track_with=[tensorboard]', '+tracker_kwargs.log_dir=tb');
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(
    (parse(ok.stdout) as Record<string, any>).tracker_kwargs.log_dir,
    `${process.cwd()}/tb`,
    'an override is relative to the working directory',
  );
});

test('a bad override exits 2 naming it', () => {
  const r = starpo('config', 'check', 'configs/frozen_lake.yaml', '+seed=1');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /`\+seed=1`: `seed` is already set \(to 42\)/);
});
