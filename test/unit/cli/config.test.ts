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

test('a tracker starpo does not write, tensorboard without log_dir, or a tracking URI that is not http(s), exits 2 naming the key, the value and what is allowed', () => {
  const swanlab = starpo('config', 'check', 'configs/frozen_lake.yaml', '+track_with=swanlab');
  assert.equal(swanlab.status, 2);
  assert.match(
    swanlab.stderr,
    /`track_with` .*: allowed: tensorboard, mlflow, wandb, a non-empty list of them, or null \(ROLL's swanlab and stdout are not implemented\) \(got "swanlab"\)/,
  );
  const list = starpo('config', 'check', 'configs/frozen_lake.yaml', '+track_with=[tensorboard,stdout]');
  assert.equal(list.status, 2);
  assert.match(list.stderr, /\(got \["tensorboard","stdout"\]\)/);
  const wandbNoDir = starpo('config', 'check', 'configs/frozen_lake.yaml', '+track_with=wandb');
  assert.equal(wandbNoDir.status, 2);
  assert.match(
    wandbNoDir.stderr,
    /`tracker_kwargs.log_dir`: missing; `track_with: wandb` needs it \(allowed: a folder path; the run's W&B run files go to <log_dir>\/<runId>\)/,
  );
  const fileUri = starpo(
    'config',
    'check',
    'configs/frozen_lake.yaml',
    '+track_with=mlflow',
    '+tracker_kwargs.tracking_uri=file:///tmp/mlruns',
  );
  assert.equal(fileUri.status, 2);
  assert.match(fileUri.stderr, /`tracker_kwargs.tracking_uri`.*allowed: an http:\/\/ or https:\/\/ URL of an MLflow server/);
  const noDir = starpo('config', 'check', 'configs/frozen_lake.yaml', '+track_with=[tensorboard]');
  assert.equal(noDir.status, 2);
  assert.match(noDir.stderr, /`tracker_kwargs.log_dir`: missing; `track_with: tensorboard` needs it/);
  const other = starpo('config', 'check', 'configs/frozen_lake.yaml', '+track_with=tensorboard', '+tracker_kwargs.entity=x');
  assert.equal(other.status, 2);
  assert.match(
    other.stderr,
    /unknown key `tracker_kwargs.entity`.*allowed under `tracker_kwargs`: log_dir, tracking_uri, project, name, notes, tags, api_key/,
  );
  const ok = starpo(
    'config',
    'print',
    'configs/frozen_lake.yaml',
    '+track_with=[tensorboard,mlflow,wandb]',
    '+tracker_kwargs.log_dir=tb',
    '+tracker_kwargs.tracking_uri=http://127.0.0.1:5000',
    '+tracker_kwargs.tags=[a,b]',
    '+tracker_kwargs.notes=n',
  );
  assert.equal(ok.status, 0, ok.stderr);
  const printed = parse(ok.stdout) as Record<string, any>;
  assert.equal(printed.tracker_kwargs.log_dir, `${process.cwd()}/tb`, 'an override is relative to the working directory');
  assert.deepEqual(
    [printed.track_with, printed.tracker_kwargs.tags],
    [
      ['tensorboard', 'mlflow', 'wandb'],
      ['a', 'b'],
    ],
  );
});

test('a bad override exits 2 naming it', () => {
  const r = starpo('config', 'check', 'configs/frozen_lake.yaml', '+seed=1');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /`\+seed=1`: `seed` is already set \(to 42\)/);
});
