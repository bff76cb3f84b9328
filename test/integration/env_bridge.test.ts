/**
 * The env bridge (python/starpo_envs) served for real and played over OpenEnv's WebSocket protocol with
 * openenv-core's own client (test/fixtures/openenv/play_session.py): Gymnasium's FrozenLake answers as starpo's
 * FrozenLakeEnv does for the same seeds and answers, reasoning-gym scores with its own score_answer, the example
 * env of docs/envs.md plays, and `starpo env serve` starts, prints its URL and refuses what it cannot serve.
 * The first run makes the bridge's venv from PyPI (about a minute); later runs reuse it.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type EnvServer, startEnvServer } from '../../infra/env_server';
import { ensureEnvVenv } from '../../infra/env_venv';
import { FrozenLakeEnv } from '../../src/envs/frozen_lake';
import { Rng } from '../../src/util/rng';

interface Answer {
  observation: { text: string; info: Record<string, number | boolean> };
  reward: number | null;
  done: boolean;
}

const FIXTURES = join(__dirname, '../fixtures/openenv');
let python = '';
const servers: EnvServer[] = [];

before(
  async () => {
    python = await ensureEnvVenv({ log: (line) => console.log(line) });
  },
  { timeout: 1_800_000 },
);
after(async () => {
  for (const s of servers) await s.stop();
});

async function serve(spec: string, config?: Record<string, unknown>): Promise<string> {
  const server = await startEnvServer(spec, { config });
  servers.push(server);
  return server.url;
}

/** Plays `episodes` at `url` with openenv-core's client, one session each; the answers of each episode. */
function play(url: string, episodes: Array<{ seed: number; answers: string[] }>): Answer[][] {
  const r = spawnSync(python, [join(FIXTURES, 'play_session.py'), url], { input: JSON.stringify(episodes), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Answer[][];
}

/** Answers for an episode: the four actions in mixed case, no tags at all, and a word that is no action. */
function answersFor(seed: number): string[] {
  const pool = ['Left', 'Down', 'Right', 'Up', 'left', 'DOWN', 'right', 'up', '', 'jump'];
  const rng = new Rng('bridge-test', seed);
  return Array.from({ length: 14 }, () => pool[rng.int(pool.length)]);
}

/** What starpo's own FrozenLakeEnv answers for the same seed and answers (tags around every non-empty answer). */
function starpoEpisode(config: Record<string, unknown>, seed: number, answers: string[]): Answer[] {
  const env = new FrozenLakeEnv(config);
  const out: Answer[] = [{ observation: { text: env.reset(seed).observation, info: {} }, reward: null, done: false }];
  for (const answer of answers) {
    const r = env.step(answer === '' ? 'I go left' : `<answer>${answer}</answer>`);
    out.push({ observation: { text: r.observation, info: r.info }, reward: r.reward, done: r.terminated });
    if (r.terminated) break;
  }
  return out;
}

for (const config of [
  { size: 4, p: 0.8, is_slippery: false, format_penalty: -0.01 },
  { size: 5, p: 0.7, is_slippery: false, format_penalty: -0.1, reward_schedule: [1, -1, -0.01], observation_format: 'grid_neighbors', max_steps: 6 },
]) {
  test(`gymnasium:FrozenLake-v1 answers as starpo's frozen_lake, ${JSON.stringify(config)}`, async () => {
    const url = await serve('gymnasium:FrozenLake-v1', config);
    const episodes = Array.from({ length: 40 }, (_, seed) => ({ seed, answers: answersFor(seed) }));
    const played = play(url, episodes).map((episode) => episode.map(({ observation, reward, done }) => ({ observation, reward, done })));
    const expected = episodes.map(({ seed, answers }) => starpoEpisode(config, seed, answers));
    assert.deepEqual(played, expected);
    const steps = expected.flatMap((e) => e.slice(1));
    const count = (f: (a: Answer) => boolean) => steps.filter(f).length;
    assert.ok(count((a) => a.observation.info.success === true) > 0, 'some episodes reach the goal');
    assert.ok(count((a) => a.observation.info.action_is_valid === false) > 0, 'some answers are invalid');
    assert.ok(count((a) => a.done && a.observation.info.success === false) > 0, 'some episodes end in a hole or at the cap');
  });
}

test('reasoning_gym:basic_arithmetic asks one question per seed and scores with its own score_answer', async () => {
  const url = await serve('reasoning_gym:basic_arithmetic', { max_terms: 3 });
  const [wrong, empty, other] = play(url, [
    { seed: 7, answers: ['surely not a number'] },
    { seed: 7, answers: [''] },
    { seed: 8, answers: ['1'] },
  ]);
  assert.equal(wrong[0].observation.text, empty[0].observation.text, 'the same seed asks the same question');
  assert.notEqual(wrong[0].observation.text, other[0].observation.text);
  assert.deepEqual([wrong[1].reward, wrong[1].done, wrong[1].observation.info.success], [0, true, false]);
  assert.deepEqual([empty[1].reward, empty[1].observation.info.action_is_valid], [0, false]);
  const answer = /the answer: (.*)$/.exec(wrong[1].observation.text)?.[1];
  assert.ok(answer !== undefined, wrong[1].observation.text);
  const [right] = play(url, [{ seed: 7, answers: [answer] }]);
  assert.deepEqual([right[1].reward, right[1].done, right[1].observation.info.success], [1, true, true]);
});

test('the example env of docs/envs.md plays: hints lead a search to the secret', async () => {
  const url = await serve(`python:${join(FIXTURES, 'guess_env.py')}`);
  let [low, high] = [1, 16];
  const guesses = ['a number?'];
  for (;;) {
    const guess = Math.floor((low + high) / 2);
    const [episode] = play(url, [{ seed: 11, answers: [...guesses, String(guess)] }]);
    assert.deepEqual(episode[1].observation.info, { success: false, action_is_valid: false });
    const last = episode[episode.length - 1];
    if (last.observation.text === `${guess}: right`) {
      assert.deepEqual([last.reward, last.done, last.observation.info.success], [1, true, true]);
      break;
    }
    assert.equal(last.done, false);
    if (last.observation.text === `${guess}: higher`) low = guess + 1;
    else high = guess - 1;
    guesses.push(String(guess));
  }
});

test('docs/envs.md shows the example env as the file has it', () => {
  const file = readFileSync(join(FIXTURES, 'guess_env.py'), 'utf8');
  const code = file.slice(file.indexOf('import random'));
  assert.ok(readFileSync(join(__dirname, '../../docs/envs.md'), 'utf8').includes(`\`\`\`python\n${code}\`\`\``));
});

const starpo = (...args: string[]) => spawnSync(process.execPath, ['bin/starpo.js', ...args], { encoding: 'utf8', timeout: 120_000 });

test('starpo env serve refuses a dataset or a config key the bridge does not know (exit 2, naming it)', () => {
  const dataset = starpo('env', 'serve', 'reasoning_gym:no_such_dataset');
  assert.equal(dataset.status, 2, dataset.stderr);
  assert.match(dataset.stderr, /unknown reasoning_gym dataset 'no_such_dataset'; allowed: .*basic_arithmetic/);
  const key = starpo('env', 'serve', 'gymnasium:FrozenLake-v1', '--config', '{"sizes": 4}');
  assert.equal(key.status, 2, key.stderr);
  assert.match(key.stderr, /unknown key 'sizes' \(value 4\); allowed: size, p, is_slippery/);
});

test('starpo env serve prints the URL of a server that answers, and stops on SIGTERM', async () => {
  const child = spawn(process.execPath, ['bin/starpo.js', 'env', 'serve', 'gymnasium:FrozenLake-v1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += String(d);
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d) => resolve(String(d).trim()));
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const [episode] = play(url, [{ seed: 3, answers: [] }]);
  assert.equal(episode[0].observation.text, new FrozenLakeEnv({ is_slippery: false }).reset(3).observation);
  const code = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  assert.equal(await code, 0, stderr);
});
