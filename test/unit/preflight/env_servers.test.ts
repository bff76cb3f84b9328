/**
 * A config with an `openenv` tag: its env_config is checked with the rest of the config (exit 2 naming the key),
 * and its servers are asked before anything starts (exit 3 naming the tag and the server when one does not answer).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse, stringify } from 'yaml';
import { exitCodeOf } from '../../../src/cli/exit_codes';
import { ConfigError } from '../../../src/contract';
import { refuseUnreachableEnvServers } from '../../../src/preflight/env_servers';
import { validateConfig } from '../../../src/preflight/load';
import { deadUrl, startOpenEnvServer } from '../../helpers/openenv_server';

/** The quickstart config with its tag played on an OpenEnv server instead. */
function remoteConfig(envConfig: Record<string, unknown>): Record<string, any> {
  const raw = parse(readFileSync('configs/frozen_lake.yaml', 'utf8')) as Record<string, any>;
  raw.custom_envs = {
    Remote: {
      env_type: 'openenv',
      max_steps: 3,
      max_tokens_per_step: 24,
      agent_system_template: '',
      agent_template: '{observation}',
      env_config: envConfig,
    },
  };
  raw.train_env_manager.tags = ['Remote'];
  raw.val_env_manager.tags = ['Remote'];
  return raw;
}

test('a server that does not answer is refused before anything starts (exit 3), naming the tag and the server', async () => {
  const dead = await deadUrl();
  const config = validateConfig(remoteConfig({ url: dead }), 'remote.yaml'); // validation itself does not connect
  await assert.rejects(refuseUnreachableEnvServers(config), (err: Error) => {
    assert.equal(err.name, 'InfraUnavailableError');
    assert.equal(exitCodeOf(err), 3);
    assert.match(
      err.message,
      new RegExp(`\\n {2}- custom_envs\\.Remote \\(env_type openenv\\): ${dead}/health does not answer \\(ECONNREFUSED\\)$`),
    );
    return true;
  });
  const server = await startOpenEnvServer();
  try {
    await refuseUnreachableEnvServers(validateConfig(remoteConfig({ url: server.url }), 'remote.yaml'));
  } finally {
    await server.stop();
  }
});

test('a bad openenv env_config is a config problem naming the key, the value and what is allowed', () => {
  assert.throws(
    () => validateConfig(remoteConfig({ url: 'http://127.0.0.1:1', action: 'json' }), 'remote.yaml'),
    (err: Error) =>
      err instanceof ConfigError &&
      err.problems.length === 1 &&
      err.problems[0] ===
        '`custom_envs.Remote.env_config.action`: env_config of openenv: action must be "answer" or "response", got "json"',
  );
});

test('warmup.type solver takes an openenv tag with plan_field and refuses one without', () => {
  const solver = (envConfig: Record<string, unknown>) => {
    const raw = remoteConfig({ url: 'http://127.0.0.1:1', ...envConfig });
    raw.warmup = { ...raw.warmup, type: 'solver' };
    return validateConfig(raw, 'remote.yaml');
  };
  assert.equal(solver({ plan_field: 'plan' }).warmup.type, 'solver');
  assert.throws(
    () => solver({}),
    (err: Error) =>
      err instanceof ConfigError &&
      err.problems.some((p) => /solver needs a solver for every train tag, but tag "Remote" \(env_type openenv\) has no solve\(\)/.test(p)),
  );
});

test('starpo config check: exit 3 for a server that does not answer, exit 2 for a bad env_config key', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-openenv-'));
  const file = join(dir, 'remote.yaml');
  const dead = await deadUrl();
  writeFileSync(file, stringify(remoteConfig({ url: dead })));
  const down = spawnSync(process.execPath, ['bin/starpo.js', 'config', 'check', file], { encoding: 'utf8' });
  assert.equal(down.status, 3, down.stderr);
  assert.match(
    down.stderr,
    /env servers do not answer; start them .*\n {2}- custom_envs\.Remote \(env_type openenv\): http:\/\/127\.0\.0\.1:\d+\/health does not answer \(ECONNREFUSED\)/,
  );
  const typo = spawnSync(
    process.execPath,
    ['bin/starpo.js', 'config', 'check', file, '++custom_envs.Remote.env_config.obsrvation_field=text'],
    {
      encoding: 'utf8',
    },
  );
  assert.equal(typo.status, 2, typo.stderr);
  assert.match(typo.stderr, /unknown key "obsrvation_field" \(did you mean "observation_field"\?\)/);
});
