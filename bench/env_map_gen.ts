/**
 * Bench: FrozenLake map generation (SPEC.md §8) and a full env reset, per map.
 * Run: npx tsx bench/env_map_gen.ts [count=20000] [size=4]
 */
import { FrozenLakeEnv } from '../src/envs/frozen_lake';
import { generateMap } from '../src/envs/frozen_lake_map';
import { Rng } from '../src/util/rng';

function main(): void {
  const count = Number(process.argv[2] ?? 20000);
  const size = Number(process.argv[3] ?? 4);
  const rng = new Rng('bench/maps');
  for (let i = 0; i < 1000; i++) generateMap(size, 0.8, rng); // warm-up (JIT)
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < count; i++) generateMap(size, 0.8, rng);
  const genUs = Number(process.hrtime.bigint() - t0) / 1e3 / count;
  const env = new FrozenLakeEnv({ size, is_slippery: false });
  t0 = process.hrtime.bigint();
  for (let i = 0; i < count; i++) env.reset(i);
  const resetUs = Number(process.hrtime.bigint() - t0) / 1e3 / count;
  console.log(`frozen_lake ${size}x${size}, p 0.8: generateMap ${genUs.toFixed(2)} us/map, reset ${resetUs.toFixed(2)} us/reset (${count} each)`);
}

main();
