/**
 * The `openenv` env type against a server speaking OpenEnv's protocol (test/helpers/openenv_server.ts):
 * what it sends (seed and reset data, the action field), how it reads the answers (text, reward, done, info),
 * its env_config checks, and the health check config validation runs.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { EnvConfigError } from '../../../src/contract';
import { type OpenEnvEnv, serverUrls } from '../../../src/envs/openenv/env';
import { checkEnvServers, createEnv, createInProcessEnv, validateEnvConfig } from '../../../src/envs/registry';
import { deadUrl, startOpenEnvServer, type TestOpenEnvServer } from '../../helpers/openenv_server';

let server: TestOpenEnvServer;
before(async () => {
  server = await startOpenEnvServer();
});
after(() => server.stop());

test('an episode: reset sends the seed and the reset data, steps send the answer as the action field, answers become the result', async () => {
  const env = createEnv('openenv', { url: server.url, reset: { level: 2 }, env_instruction: 'Say the word.' });
  const first = await env.reset(7);
  assert.deepEqual(first, { observation: 'Say Up.', info: { env_instruction: 'Say the word.' } });
  assert.deepEqual(server.resets.at(-1), { seed: 7, level: 2 });
  const miss = await env.step('<think>hm</think><answer> Left </answer><|im_end|>');
  assert.deepEqual(miss, {
    observation: 'Not Left. Say Up.',
    reward: 0,
    terminated: false,
    info: { success: false, moves: 1, action_is_valid: true, action_is_effective: true },
  });
  const noTags = await env.step('Up<|im_end|>');
  assert.equal(noTags.observation, 'Not . Say Up.', 'no answer tags: the action is ""');
  assert.equal(noTags.info.action_is_valid, false);
  const hit = await env.step('<answer>Up</answer>');
  assert.equal(hit.reward, 1);
  assert.equal(hit.terminated, true);
  assert.equal(hit.info.success, true);
  assert.equal(env.render(), 'Right.');
  await assert.rejects(
    Promise.resolve().then(() => env.step('<answer>Up</answer>')),
    /episode has terminated/,
  );
});

test('action "response" sends the reply without special tokens; the think pattern takes the answer after a think block', async () => {
  const raw = createEnv('openenv', { url: server.url, action: 'response' });
  await raw.reset(3);
  assert.equal((await raw.step('Up<|im_end|>')).reward, 1);
  const think = createEnv(
    'openenv',
    { url: server.url, action_pattern: '<think>(.*?)</think>\\s*<answer>(.*?)</answer>' },
    { enableThink: true },
  );
  await think.reset(3);
  assert.equal((await think.step('<answer>Up</answer>')).observation, 'Not . Say Up.', 'no think block: no answer');
  assert.equal((await think.step('<think>it says Up</think><answer>Up</answer>')).reward, 1);
});

test('a pool of servers: env id n plays on url n mod the pool size; ws and http URLs name the same server', () => {
  const pool = { url: ['http://127.0.0.1:1', 'ws://127.0.0.1:2/ws', 'https://example.org/env/'] };
  assert.deepEqual(
    [0, 1, 2, 3, 4].map((envId) => (createEnv('openenv', pool, { envId }) as OpenEnvEnv).url),
    ['ws://127.0.0.1:1/ws', 'ws://127.0.0.1:2/ws', 'wss://example.org/env/ws', 'ws://127.0.0.1:1/ws', 'ws://127.0.0.1:2/ws'],
  );
  assert.deepEqual(serverUrls('wss://example.org/x/ws'), { ws: 'wss://example.org/x/ws', health: 'https://example.org/x/health' });
});

test('plan_field: solve() is the plan in the last answer (for warmup: solver); without it the env has no solver', async () => {
  assert.equal(createEnv('openenv', { url: server.url }).solve, undefined);
  const env = createEnv('openenv', { url: server.url, plan_field: 'plan' });
  await env.reset(6);
  assert.deepEqual(env.solve?.(), ['Right']);
  await env.step('<answer>Up</answer>');
  assert.deepEqual(env.solve?.(), ['Right'], 're-planned from the new state');
  await env.step('<answer>Right</answer>');
  assert.equal(env.solve?.(), null, 'no plan once the episode ended');
  const wrong = createEnv('openenv', { url: server.url, plan_field: 'text' });
  await assert.rejects(
    Promise.resolve().then(() => wrong.reset(6)),
    /ws:\/\/127\.0\.0\.1:\d+\/ws: plan field "text" is "Say Right\.", not a list of action strings or null/,
  );
  wrong.close();
});

test('bad env_config: each error names the key, the value and what is allowed', () => {
  const bad = (config: Record<string, unknown>, key: string, message: RegExp) =>
    assert.throws(
      () => createEnv('openenv', config),
      (err: Error) => err instanceof EnvConfigError && err.key === key && message.test(err.message),
    );
  bad({}, 'url', /^env_config of openenv: url is required \(an http:\/\/, https:\/\/, ws:\/\/ or wss:\/\/ URL/);
  bad({ url: 'ftp://x' }, 'url', /url must be an http:\/\/.* got "ftp:\/\/x"/);
  bad({ url: [] }, 'url', /url must be .*, got \[\]/);
  bad({ url: 'http://x', urll: 1 }, 'urll', /unknown key "urll" \(did you mean "url"\?\)/);
  bad({ url: 'http://x', action: 'both' }, 'action', /action must be "answer" or "response", got "both"/);
  bad({ url: 'http://x', reset: { seed: 1 } }, 'reset', /reset must be a mapping of extra reset data without "seed"/);
  bad(
    { url: 'http://x', max_message_bytes: 10 },
    'max_message_bytes',
    /max_message_bytes must be an integer in \[1024, 67108864\], got 10/,
  );
  bad({ url: 'http://x', answer_timeout_seconds: 0 }, 'answer_timeout_seconds', /must be a finite number in \(0, 3600\], got 0/);
  bad({ url: 'http://x', observation_field: 'a b' }, 'observation_field', /must be a field name/);
  bad({ url: 'http://x', plan_field: 3 }, 'plan_field', /plan_field must be a field name .*got 3/);
});

test('config validation checks an openenv env_config without connecting; the health check asks every server', async () => {
  const dead = await deadUrl();
  assert.doesNotThrow(() => validateEnvConfig('openenv', { url: dead }));
  assert.equal(createInProcessEnv('openenv', { url: dead }), null);
  assert.equal(createInProcessEnv('frozen_lake', {})?.envType, 'frozen_lake');
  await checkEnvServers('openenv', { url: [server.url, `${server.url}/ws`] });
  await checkEnvServers('frozen_lake', {});
  await assert.rejects(checkEnvServers('openenv', { url: [server.url, dead] }), (err: Error) => {
    assert.equal(err.message, `${dead}/health does not answer (ECONNREFUSED)`);
    return true;
  });
});

test('a server that refuses connections is tried again until connect_timeout_seconds: one restarted in time loses nothing', async () => {
  const url = await deadUrl();
  const env = createEnv('openenv', { url, connect_timeout_seconds: 5 });
  const reset = env.reset(3);
  await new Promise((r) => setTimeout(r, 700)); // a few refusals first
  const late = await startOpenEnvServer(undefined, Number(new URL(url).port));
  try {
    assert.equal((await reset).observation, 'Say Up.');
    env.close();
    const refused = createEnv('openenv', { url: await deadUrl(), connect_timeout_seconds: 0.6 });
    await assert.rejects(refused.reset(3), /connection refused$/);
  } finally {
    await late.stop();
  }
});
