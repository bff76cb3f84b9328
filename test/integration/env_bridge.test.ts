/**
 * The env bridge (python/starpo_envs) served for real from its venv and played as a run plays it, by starpo's
 * `openenv` env type: Gymnasium's FrozenLake answers every reset and step as starpo's frozen_lake does for the
 * same seeds and replies (and plans as its solver does), reasoning-gym scores with its own score_answer, a GEM
 * game plays by GEM's own rules, a text env class of your own plays, and `starpo env serve` starts, prints its URL, refuses what it cannot serve and stops on SIGTERM.
 * The first run makes the bridge's venv from PyPI (about a minute); later runs reuse it.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type EnvServer, startEnvServer } from '../../infra/env_server';
import { ENV_VENV, ensureVenv } from '../../infra/env_venv';
import type { StepResult } from '../../src/envs/env';
import { FrozenLakeEnv } from '../../src/envs/frozen_lake';
import { createEnv } from '../../src/envs/registry';
import { Rng } from '../../src/util/rng';

const FIXTURES = join(__dirname, '../fixtures/openenv');
const servers: EnvServer[] = [];

before(() => ensureVenv(ENV_VENV, { log: (line) => console.log(line) }), { timeout: 1_800_000 });
after(async () => {
  for (const s of servers) await s.stop();
});

/** Every server's stdout and stderr, by URL. */
const outputs = new Map<string, string[]>();

async function serve(spec: string, config?: Record<string, unknown>): Promise<string> {
  const output: string[] = [];
  const server = await startEnvServer(spec, { config, onOutput: (text) => output.push(text) });
  servers.push(server);
  outputs.set(server.url, output);
  return server.url;
}

/** One episode as the rollout sees it: the reset's observation, each step's result until it terminates, and the env's plan (solve()) from each state. */
interface Played {
  reset: string;
  steps: StepResult[];
  plans: Array<string[] | null | undefined>;
}

/** Plays `replies` from `seed` on an env (remote or built-in), stopping when it terminates. */
async function playEpisode(env: ReturnType<typeof createEnv>, seed: number, replies: string[]): Promise<Played> {
  const reset = (await env.reset(seed)).observation;
  const steps: StepResult[] = [];
  const plans = [env.solve?.()];
  for (const reply of replies) {
    const step = await env.step(reply);
    steps.push(step);
    plans.push(env.solve?.());
    if (step.terminated) break;
  }
  return { reset, steps, plans };
}

/** A model's replies: the four actions in mixed case, a reply without tags, and a word that is no action. */
function repliesFor(seed: number): string[] {
  const pool = ['Left', 'Down', 'Right', 'Up', 'left', 'DOWN', 'right', ' up ', null, 'jump'];
  const rng = new Rng('bridge-test', seed);
  return Array.from({ length: 14 }, () => {
    const answer = pool[rng.int(pool.length)];
    return answer === null ? 'I go left' : `<answer>${answer}</answer><|im_end|>`;
  });
}

for (const config of [
  { size: 4, p: 0.8, is_slippery: false, format_penalty: -0.01 },
  {
    size: 5,
    p: 0.7,
    is_slippery: false,
    format_penalty: -0.1,
    reward_schedule: [1, -1, -0.01],
    observation_format: 'grid_neighbors',
    max_steps: 6,
  },
]) {
  test(`gymnasium:FrozenLake-v1 answers as starpo's frozen_lake, ${JSON.stringify(config)}`, async () => {
    const url = await serve('gymnasium:FrozenLake-v1', config);
    const remote = createEnv('openenv', { url, plan_field: 'plan' });
    const builtIn = createEnv('frozen_lake', config);
    const steps: StepResult[] = [];
    for (let seed = 0; seed < 40; seed++) {
      const replies = repliesFor(seed);
      const played = await playEpisode(remote, seed, replies);
      assert.deepEqual(played, await playEpisode(builtIn, seed, replies), `seed ${seed}`);
      steps.push(...played.steps);
    }
    const count = (f: (s: StepResult) => boolean) => steps.filter(f).length;
    assert.ok(count((s) => s.info.success === true) > 0, 'some episodes reach the goal');
    assert.ok(count((s) => s.info.action_is_valid === false) > 0, 'some replies are invalid');
    assert.ok(count((s) => s.terminated && s.info.success === false) > 0, 'some episodes end in a hole or at the cap');
    // Ending a session is quiet: the server is left to close the socket, so its log holds no traceback per episode.
    await servers.find((s) => s.url === url)?.stop();
    assert.doesNotMatch(outputs.get(url)?.join('') ?? '', /Traceback|Exception in ASGI/);
  });
}

test('reasoning_gym:basic_arithmetic asks one question per seed and scores with its own score_answer', async () => {
  const url = await serve('reasoning_gym:basic_arithmetic', { max_terms: 3, format_penalty: -0.1 });
  const env = createEnv('openenv', { url });
  const wrong = await playEpisode(env, 7, ['<answer>surely not a number</answer>']);
  const empty = await playEpisode(env, 7, ['no tags']);
  const other = await playEpisode(env, 8, ['<answer>1</answer>']);
  assert.equal(wrong.reset, empty.reset, 'the same seed asks the same question');
  assert.notEqual(wrong.reset, other.reset);
  assert.deepEqual([wrong.steps[0].reward, wrong.steps[0].terminated, wrong.steps[0].info.success], [0, true, false]);
  assert.deepEqual([empty.steps[0].reward, empty.steps[0].info.action_is_valid], [-0.1, false]);
  const answer = /the answer: (.*)$/.exec(wrong.steps[0].observation)?.[1];
  assert.ok(answer !== undefined, wrong.steps[0].observation);
  const right = await playEpisode(env, 7, [`<answer>${answer}</answer>`]);
  assert.deepEqual([right.steps[0].reward, right.steps[0].terminated, right.steps[0].info.success], [1, true, true]);
});

test("gem:game:GuessTheNumber-v0-easy plays by GEM's rules: an answer reaches GEM boxed, hints lead a search to the number", async () => {
  const url = await serve('gem:game:GuessTheNumber-v0-easy', { max_turns: 6 });
  const env = createEnv('openenv', { url });
  const reset = (await env.reset(3)).observation;
  assert.match(reset, /^You are playing Guess The Number\.\nYou have to guess the number between 1 and 10 \(inclusive\) within 6 turns\./);
  assert.equal((await env.reset(3)).observation, reset, 'the same seed starts the same game');
  // A reply with its own \boxed{} is sent as the model wrote it; an unboxed answer is boxed; no number is GEM's invalid move.
  let [low, high] = [1, 10];
  for (let turn = 1; ; turn++) {
    const guess = Math.floor((low + high) / 2);
    const step = await env.step(turn % 2 === 1 ? `<answer>${guess}</answer>` : `<answer>I say \\boxed{${guess}}</answer>`);
    if (step.observation.startsWith('Congratulations!')) {
      assert.deepEqual([step.reward, step.terminated, step.info.success], [1, true, true]);
      break;
    }
    assert.ok(turn < 4, 'binary search finds 1..10 in 4 guesses');
    assert.match(
      step.observation,
      new RegExp(
        `^At turn ${turn}, you guessed ${guess}, and the target number is (higher|lower) than ${guess}\\.\nEnter your next guess\\.$`,
      ),
    );
    assert.deepEqual([step.reward, step.terminated, step.info.success], [0, false, false]);
    if (step.observation.includes('higher')) low = guess + 1;
    else high = guess - 1;
  }
  await env.reset(3);
  const invalid = await env.step('<answer>a number?</answer>');
  assert.deepEqual(
    [invalid.observation, invalid.reward, invalid.terminated],
    ['At turn 1, you did not provide a valid guess.', -0.1, true],
  );
});

test('a text env class of your own (<file.py>:<Class>, with --config) plays: hints lead a search to the secret', async () => {
  const url = await serve(`${join(FIXTURES, 'guess_env.py')}:GuessEnv`, { top: 100, turns: 9 });
  const env = createEnv('openenv', { url });
  const reset = (await env.reset(11)).observation;
  assert.equal(reset, 'I think of a number from 1 to 100. Guess it.');
  const invalid = await env.step('<answer>a number?</answer>');
  assert.deepEqual([invalid.reward, invalid.terminated, invalid.info.action_is_valid], [-0.1, false, false]);
  let [low, high] = [1, 100];
  for (let turn = 2; ; turn++) {
    const guess = Math.floor((low + high) / 2);
    const step = await env.step(`<answer>${guess}</answer>`);
    if (step.observation === `${guess} is right.`) {
      assert.deepEqual([step.reward, step.terminated, step.info.success], [1, true, true]);
      break;
    }
    assert.ok(turn < 9, 'binary search finds 1..100 in 7 guesses');
    assert.equal(step.terminated, false);
    if (step.observation === `${guess}: higher.`) low = guess + 1;
    else high = guess - 1;
  }
});

test('docs/envs.md shows the example env as the file has it', () => {
  const file = readFileSync(join(FIXTURES, 'guess_env.py'), 'utf8');
  const code = file.slice(file.indexOf('import random'));
  assert.ok(readFileSync(join(__dirname, '../../docs/envs.md'), 'utf8').includes(`\`\`\`python\n${code}\`\`\``));
});

const starpo = (...args: string[]) => spawnSync(process.execPath, ['bin/starpo.js', ...args], { encoding: 'utf8', timeout: 120_000 });

test('starpo env serve refuses a dataset, a config key or a class the bridge cannot serve (exit 2, naming it)', () => {
  const dataset = starpo('env', 'serve', 'reasoning_gym:no_such_dataset');
  assert.equal(dataset.status, 2, dataset.stderr);
  assert.match(dataset.stderr, /unknown reasoning_gym dataset 'no_such_dataset'; allowed: .*basic_arithmetic/);
  const key = starpo('env', 'serve', 'gymnasium:FrozenLake-v1', '--config', '{"sizes": 4}');
  assert.equal(key.status, 2, key.stderr);
  assert.match(key.stderr, /unknown key 'sizes' \(value 4\); allowed: size, p, is_slippery/);
  const gem = starpo('env', 'serve', 'gem:math:GSM8K');
  assert.equal(gem.status, 2, gem.stderr);
  assert.match(gem.stderr, /spec gem:math:GSM8K: the bridge serves GEM's game: and rg: envs/);
  const gemKey = starpo('env', 'serve', 'gem:game:GuessTheNumber-v0-easy', '--config', '{"turns": 3}');
  assert.equal(gemKey.status, 2, gemKey.stderr);
  assert.match(gemKey.stderr, /unknown key 'turns' \(value 3\); allowed: min_number, max_number, max_turns/);
  const cls = starpo('env', 'serve', `${join(FIXTURES, 'guess_env.py')}:NoSuchEnv`);
  assert.equal(cls.status, 2, cls.stderr);
  assert.match(cls.stderr, /guess_env\.py has no class 'NoSuchEnv' with reset\(seed=\.\.\.\) and step\(answer\) methods/);
  const kwargs = starpo('env', 'serve', `${join(FIXTURES, 'guess_env.py')}:GuessEnv`, '--config', '{"tops": 3}');
  assert.equal(kwargs.status, 2, kwargs.stderr);
  assert.match(kwargs.stderr, /--config \{'tops': 3\} does not fit GuessEnv\(\.\.\.\): .*unexpected keyword argument 'tops'/);
});

test('starpo env serve prints the URL of a server that answers, and stops on SIGTERM', async () => {
  const child = spawn(process.execPath, ['bin/starpo.js', 'env', 'serve', 'gymnasium:FrozenLake-v1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += String(d);
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d) => resolve(String(d).trim()));
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const env = createEnv('openenv', { url });
  assert.equal((await env.reset(3)).observation, new FrozenLakeEnv({ is_slippery: false }).reset(3).observation);
  env.close();
  const code = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  assert.equal(await code, 0, stderr);
  const health = await fetch(`${url}/health`).then(
    () => 'answers',
    () => 'gone',
  );
  assert.equal(health, 'gone', 'the server stopped with the command');
});
