/**
 * Bench: env steps per second of the pure env code (no model), for every registered env type, each with its
 * default env_config for about `seconds` seconds.
 * Run: npx tsx bench/env_steps.ts [seconds=2]
 */
import { createInProcessEnv, ENV_TYPES } from '../src/envs/registry';
import { Rng } from '../src/util/rng';

function benchEnv(envType: string, seconds: number): void {
  let made: ReturnType<typeof createInProcessEnv>;
  try {
    made = createInProcessEnv(envType, undefined, { envId: 0 });
  } catch (e) {
    console.log(`${envType}: skipped (cannot run with the default env_config: ${(e as Error).message})`);
    return;
  }
  if (made === null) {
    console.log(`${envType}: skipped (served by another process)`);
    return;
  }
  const env = made;
  const answers = env.actionNames.map((a) => `<answer>${a}</answer><|im_end|>`);
  const rng = new Rng('bench/env_steps', envType);
  const answer =
    answers.length > 0 ? () => answers[rng.int(answers.length)] : () => `<answer>${env.solve?.()?.[0] ?? ''}</answer><|im_end|>`;
  const deadline = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  const t0 = process.hrtime.bigint();
  let steps = 0;
  let resets = 0;
  let now = t0;
  while (now < deadline) {
    env.reset(resets++);
    for (let done = false; !done; ) {
      done = env.step(answer()).terminated;
      steps++;
    }
    if ((resets & 15) === 0) now = process.hrtime.bigint();
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(
    `${envType}: ${Math.round(steps / secs).toLocaleString('en-US')} steps/s ` +
      `(${steps} steps, ${resets} resets, ${(steps / resets).toFixed(1)} steps/episode, ${secs.toFixed(2)} s)`,
  );
}

/**
 * reset(seed) with seeds 0, 1, 2, ... whenever an episode terminates, and step with a random valid answer
 * "<answer>{action}</answer><|im_end|>" drawn from env.actionNames (seeded, never Math.random). Envs without
 * fixed action names (countdown, whose answer is an expression) answer with their solver's first action
 * (env.solve()). Resets are inside the timed loop (one-turn envs reset every step). Envs that need an
 * env_config are skipped with a note.
 */
function main(): void {
  const seconds = Number(process.argv[2] ?? 2);
  console.log(`env steps per second, default env_config, random valid answers (free-text envs: the solver's), ~${seconds} s per env type`);
  for (const envType of ENV_TYPES) benchEnv(envType, seconds);
}

main();
