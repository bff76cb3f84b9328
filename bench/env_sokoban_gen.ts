/**
 * Bench: Sokoban room generation (docs/envs.md, gym-sokoban reverse play) and BFS solving, per room.
 * SimpleSokoban (6x6, 1 box, search_depth 300) from seeds 0..count-1, then LargerSokoban (10x10,
 * 2 boxes, search_depth 10). Every room must be solvable by the BFS solver; failures are counted.
 * Run: npx tsx bench/env_sokoban_gen.ts [count=1000] [largerCount=100]
 */
import { type RoomSpec, roomForSeed, type SokobanState, solveSokoban } from '../src/envs/sokoban_room';

function bench(name: string, spec: RoomSpec, count: number): void {
  const rooms: SokobanState[] = [];
  let t0 = process.hrtime.bigint();
  for (let seed = 0; seed < count; seed++) rooms.push(roomForSeed(spec, seed));
  const genMs = Number(process.hrtime.bigint() - t0) / 1e6 / count;
  let failures = 0;
  let steps = 0;
  let longest = 0;
  t0 = process.hrtime.bigint();
  for (const room of rooms) {
    const path = solveSokoban(room);
    if (path === null || path.length === 0) failures++;
    else {
      steps += path.length;
      longest = Math.max(longest, path.length);
    }
  }
  const solveMs = Number(process.hrtime.bigint() - t0) / 1e6 / count;
  const solved = count - failures;
  console.log(
    `${name} ${spec.rows}x${spec.cols}, ${spec.numBoxes} box(es), search_depth ${spec.searchDepth}: ` +
      `${count} rooms (seeds 0..${count - 1}), generation ${genMs.toFixed(3)} ms/room, BFS solve ${solveMs.toFixed(3)} ms/room, ` +
      `unsolvable ${failures} (expected 0), shortest solution mean ${(steps / Math.max(1, solved)).toFixed(2)} steps, max ${longest}`,
  );
}

function main(): void {
  const count = Number(process.argv[2] ?? 1000);
  const largerCount = Number(process.argv[3] ?? 100);
  for (let seed = 0; seed < 50; seed++) roomForSeed({ rows: 6, cols: 6, numBoxes: 1, searchDepth: 300 }, 1e6 + seed); // warm-up (JIT)
  bench('SimpleSokoban', { rows: 6, cols: 6, numBoxes: 1, searchDepth: 300 }, count);
  bench('LargerSokoban', { rows: 10, cols: 10, numBoxes: 2, searchDepth: 10 }, largerCount);
}

main();
