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
  assert.match(lines[2], /^ignored \(accepted for ROLL compatibility, not used\): track_with, /);
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
  assert.match(notes[1], /^ignored \(accepted for ROLL compatibility, not used\): track_with, /);
  assert.match(notes[2], /^interpolation variables from configs\/config\/traj_envs\.yaml: action_pattern, /);
  assert.equal(notes.length, 3);
});

test('a bad override exits 2 naming it', () => {
  const r = starpo('config', 'check', 'configs/frozen_lake.yaml', '+seed=1');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /`\+seed=1`: `seed` is already set \(to 42\)/);
});
