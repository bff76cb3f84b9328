/**
 * Bench: FrozenLake maps of seeds 0..N-1 as the env plays them (reset(seed): generateMap, regenerated until
 * solvable, docs/envs.md) are all solved by the BFS solver (env.solve), and the solver's path replayed reaches
 * the goal. Prints ms per map (reset) and per solve (BFS), and the failures (expected 0); never asserts.
 * Run: npx tsx bench/env_map_gen.ts [count4=10000] [count8=1000]
 */
import { FrozenLakeEnv } from '../src/envs/frozen_lake';

function bench(size: number, count: number): void {
  const env = new FrozenLakeEnv({ size, is_slippery: false });
  for (let seed = 0; seed < 200; seed++) {
    // warm-up (JIT)
    env.reset(seed);
    env.solve();
  }
  let genNs = 0n;
  let solveNs = 0n;
  let failures = 0;
  let totalLength = 0;
  for (let seed = 0; seed < count; seed++) {
    const t0 = process.hrtime.bigint();
    env.reset(seed);
    const t1 = process.hrtime.bigint();
    const path = env.solve();
    solveNs += process.hrtime.bigint() - t1;
    genNs += t1 - t0;
    const success = path !== null && path.length > 0 && path.map((a) => env.step(`<answer>${a}</answer>`)).pop()!.info.success;
    if (!success) failures++;
    else totalLength += path.length;
  }
  const ms = (ns: bigint): string => (Number(ns) / 1e6 / count).toFixed(4);
  console.log(
    `frozen_lake ${size}x${size}, p 0.8, seeds 0..${count - 1}: ${failures} unsolved, ` +
      `${ms(genNs)} ms/map (reset), ${ms(solveNs)} ms/solve (BFS), mean path ${(totalLength / (count - failures)).toFixed(2)} moves`,
  );
}

bench(4, Number(process.argv[2] ?? 10_000));
bench(8, Number(process.argv[3] ?? 1_000));
