/**
 * The env pool with `openenv` envs (manager.ts runGroups over a server speaking OpenEnv's protocol,
 * test/helpers/openenv_server.ts): every way a server can go wrong fails the episodes it touches with the
 * server's URL and the reason, the group is replaced from a fresh seed, the rollout goes on and returns
 * complete groups; nothing throws and nothing waits longer than its bound. Sessions end with their episodes.
 * A tag with env_config.command has the process that plays it start its server.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { customEnvSchema, EnvFailureError, type RolloutGroup } from '../../../src/contract';
import { checkEnvServers } from '../../../src/envs/registry';
import { charTokenizer } from '../../../src/model/tokenizer';
import { solverPolicy } from '../../../src/rollout/demonstrations';
import { type PoolOptions, runGroups } from '../../../src/rollout/manager';
import { rolloutGroup } from '../../../src/rollout/plan';
import type { Policy } from '../../../src/rollout/policy';
import { deriveSeed } from '../../../src/util/rng';
import { deadUrl, type FaultSpec, startOpenEnvServer } from '../../helpers/openenv_server';

const tokenizer = charTokenizer();
const S0 = deriveSeed(7, 'train', 0, 0);
const FRESH = deriveSeed(S0, 'replace');

const remote = (env_config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  customEnvSchema.parse({
    env_type: 'openenv',
    max_steps: 10,
    max_tokens_per_step: 24,
    agent_system_template: '',
    agent_template: '{observation}',
    env_config: { max_message_bytes: 4096, answer_timeout_seconds: 0.5, ...env_config },
    ...extra,
  });

/** Always answers Up: episodes whose word is Up end in one turn, the others after the server's 3 steps. */
const sayUp: Policy = {
  async generate(req) {
    const tokens = req.contexts.map((_, i) => tokenizer.encode('<answer>Up</answer><|im_end|>').slice(0, req.maxNewTokens[i]));
    return { tokens, logprobs: tokens.map((t) => t.map(() => 0)) };
  },
};

const groups = (tag: string, ids: number[]): RolloutGroup[] =>
  ids.map((g) => rolloutGroup(tag, g, 0, deriveSeed(7, 'train', 0, g), [7, 'train', 0]));

const poolOptions = (customEnvs: PoolOptions['customEnvs']): PoolOptions => ({
  policy: sayUp,
  tokenizer,
  customEnvs,
  sequenceLength: 768,
  maxNewTokens: 24,
  split: 'train',
  step: 0,
  groupSize: 2,
  redundancy: 0,
});

/**
 * Plays groups 0 and 1 (2 envs each) on a server with `fault` on group 0's seed: the failure is counted for
 * both members, group 0 is played again from a fresh seed, group 1 is untouched. Returns the first error.
 */
async function faultyRollout(fault: Omit<FaultSpec, 'seeds'>, extra: Record<string, unknown> = {}): Promise<{ error: string; ws: string }> {
  const server = await startOpenEnvServer({ ...fault, seeds: [S0] });
  try {
    const out = await runGroups(groups('Remote', [0, 1]), poolOptions({ Remote: remote({ url: server.url }, extra) }));
    assert.deepEqual(out.stats, { failedEpisodes: 2, replacedGroups: 1, droppedGroups: 0 });
    assert.equal(out.errors.length, 2);
    assert.deepEqual(
      out.trajectories.map((t) => [t.groupId, t.envId, t.seed]),
      [
        [0, 0, FRESH],
        [0, 1, FRESH],
        [1, 2, deriveSeed(7, 'train', 0, 1)],
        [1, 3, deriveSeed(7, 'train', 0, 1)],
      ],
    );
    assert.ok(out.trajectories.every((t) => t.turns.length >= 1 && !t.truncated));
    assert.equal(await server.settled(), 0, 'every session is closed');
    return { error: out.errors[0], ws: `ws://${new URL(server.url).host}/ws` };
  } finally {
    await server.stop();
  }
}

const where = `Remote env 0 (group 0, seed ${S0})`;

test("a clean rollout: complete groups, the server's text and rewards in the turns, every session closed, replayable", async () => {
  const server = await startOpenEnvServer();
  try {
    const cfg = { Remote: remote({ url: server.url, reset: { level: 1 } }) };
    const out = await runGroups(groups('Remote', [0, 1, 2]), poolOptions(cfg));
    assert.deepEqual(out.stats, { failedEpisodes: 0, replacedGroups: 0, droppedGroups: 0 });
    assert.equal(out.trajectories.length, 6);
    for (const t of out.trajectories) {
      const word = ['Left', 'Down', 'Right', 'Up'][t.seed % 4];
      assert.equal(t.turns[0].observation, `Say ${word}.`);
      assert.equal(t.success, word === 'Up');
      assert.equal(t.turns.length, word === 'Up' ? 1 : 3);
      assert.equal(t.episodeScore, word === 'Up' ? 1 : 0);
    }
    assert.deepEqual(
      server.resets.map((r) => r.level),
      [1, 1, 1, 1, 1, 1],
    );
    assert.equal(await server.settled(), 0, 'every session is closed');
    assert.equal(server.closeMessages(), 6, 'each session said close');
    const again = await runGroups(groups('Remote', [0, 1, 2]), poolOptions(cfg));
    assert.deepEqual(again, out);
  } finally {
    await server.stop();
  }
});

test("warmup: solver on a server that sends its plan (plan_field): every demonstration plays the server's plan and wins", async () => {
  const server = await startOpenEnvServer();
  try {
    const cfg = { Remote: remote({ url: server.url, plan_field: 'plan' }) };
    const out = await runGroups(groups('Remote', [0, 1, 2]), { ...poolOptions(cfg), policy: solverPolicy(tokenizer) });
    assert.deepEqual(out.stats, { failedEpisodes: 0, replacedGroups: 0, droppedGroups: 0 });
    for (const t of out.trajectories) {
      assert.deepEqual(
        t.turns.map((u) => u.response),
        [`<answer>${['Left', 'Down', 'Right', 'Up'][t.seed % 4]}</answer><|im_end|>`],
      );
      assert.equal(t.success, true);
    }
  } finally {
    await server.stop();
  }
});

test("connection refused: the tag's groups fail, are replaced, then dropped; the other tag's groups complete", async () => {
  const server = await startOpenEnvServer();
  const dead = await deadUrl();
  try {
    const cfg = { Good: remote({ url: server.url }), Dead: remote({ url: dead, connect_timeout_seconds: 0.5 }) };
    const out = await runGroups([...groups('Good', [0]), ...groups('Dead', [1])], poolOptions(cfg));
    assert.deepEqual(out.stats, { failedEpisodes: 6, replacedGroups: 2, droppedGroups: 1 });
    assert.equal(
      out.errors[0],
      `Dead env 2 (group 1, seed ${deriveSeed(7, 'train', 0, 1)}): reset threw: ws://${new URL(dead).host}/ws: connection refused`,
    );
    assert.deepEqual(
      out.trajectories.map((t) => t.tag),
      ['Good', 'Good'],
    );
  } finally {
    await server.stop();
  }
});

test('no answer within answer_timeout_seconds: the episode fails after it, not later', async () => {
  const { error, ws } = await faultyRollout({ kind: 'silent', at: 1 });
  assert.equal(error, `${where}: step 1 threw: ${ws}: no answer within 0.5 s`);
});

test('no answer within what is left of episode_timeout_seconds: the rollout does not wait for the server', async () => {
  const { error } = await faultyRollout({ kind: 'silent', at: 1 }, { episode_timeout_seconds: 0.4 });
  assert.match(
    error,
    new RegExp(
      `^${where.replace(/[()]/g, '\\$&')}: step 1 did not settle within the 0\\.\\d\\d s left of custom_envs\\.Remote\\.episode_timeout_seconds = 0\\.4$`,
    ),
  );
});

test('the server closes the socket: the episode fails naming the close code', async () => {
  const { error, ws } = await faultyRollout({ kind: 'close', at: 'reset' });
  assert.equal(error, `${where}: reset threw: ${ws}: socket closed by the server (code 1011: injected)`);
});

test('malformed JSON: the episode fails quoting the answer', async () => {
  const { error, ws } = await faultyRollout({ kind: 'malformed', at: 1 });
  assert.equal(error, `${where}: step 1 threw: ${ws}: malformed JSON in its answer: "{\\"type\\": \\"observation\\", \\"data\\": "`);
});

test('JSON that is not an observation: the episode fails naming the shape expected', async () => {
  const { error, ws } = await faultyRollout({ kind: 'shape', at: 'reset' });
  assert.match(error, new RegExp(`: reset threw: ${ws}: an answer that is not \\{"type": "observation", "data": \\{"observation"`));
});

test("an error answer: the episode fails with the server's message and code", async () => {
  const { error, ws } = await faultyRollout({ kind: 'error', at: 1 });
  assert.equal(error, `${where}: step 1 threw: ${ws}: error answer: env exploded (EXECUTION_ERROR)`);
});

test('an observation over max_message_bytes: the episode fails naming the limit', async () => {
  const { error, ws } = await faultyRollout({ kind: 'oversized', at: 1 });
  assert.equal(error, `${where}: step 1 threw: ${ws}: an answer over max_message_bytes (4096 bytes)`);
});

test('a reward that is not a finite number: the episode fails naming the value', async () => {
  const { error, ws } = await faultyRollout({ kind: 'reward_infinite', at: 1 });
  assert.equal(error, `${where}: step 1 threw: ${ws}: reward Infinity is not a finite number`);
});

test('env_config.command: the process that plays the tag starts its server once, waits for it, and plays on it', async () => {
  const url = await deadUrl(); // a free port, where the command's server will listen
  const command = `"${process.execPath}" --import tsx test/helpers/openenv_server_main.ts ${new URL(url).port}`;
  const cfg = { Local: remote({ url, command }) };
  await checkEnvServers('openenv', cfg.Local.env_config); // not asked before the run: the worker starts it
  const out = await runGroups(groups('Local', [0, 1]), poolOptions(cfg));
  assert.deepEqual(out.stats, { failedEpisodes: 0, replacedGroups: 0, droppedGroups: 0 });
  assert.equal(out.trajectories.length, 4);
  assert.deepEqual(await runGroups(groups('Local', [0, 1]), poolOptions(cfg)), out, 'the same server, still running');
});

test('env_config.command whose server does not come up: an EnvFailureError naming the tag, the command and why', async () => {
  const url = await deadUrl();
  const cfg = { Local: remote({ url, command: 'echo starting; exit 3' }) };
  await assert.rejects(
    runGroups(groups('Local', [0]), poolOptions(cfg)),
    (err: Error) =>
      err instanceof EnvFailureError &&
      err.message ===
        `Local: its env server could not be started: env_config.command "echo starting; exit 3" exited (code 3) before ${url}/health answered`,
  );
});
