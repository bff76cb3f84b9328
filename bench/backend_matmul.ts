/**
 * Matmul speed of the wasm and the native TensorFlow backend, side by side in one process: GFLOP/s of a
 * 256^3 and a 1024^3 float32 matmul (bench/flops.ts) on each, by wall time and by this process's CPU time
 * (TensorFlow uses several threads, wasm one), with the load average before and after. No assertions.
 * Needs `starpo backend install`; without it only wasm is measured.
 *
 *   node --import tsx bench/backend_matmul.ts
 */
import { loadavg } from 'node:os';
import { initBackend } from '../src/model/backend';
import { inspectNativeBuild, nativeBuildDir } from '../src/model/native_build';
import { matmulGflops } from './flops';

async function main(): Promise<void> {
  delete process.env.STARPO_BACKEND; // this bench picks the backends itself
  const load = [loadavg()[0]];
  const backends = ['wasm', ...(inspectNativeBuild().state === 'installed' ? ['tensorflow'] : [])];
  if (backends.length === 1) console.log(`no native build in ${nativeBuildDir()}: measuring wasm only (run \`starpo backend install\`)`);
  for (const name of backends) {
    await initBackend(name);
    for (const n of [256, 1024]) {
      const r = matmulGflops(n);
      console.log(
        `${name.padEnd(10)} ${n}^3 matmul: ${r.wall.toFixed(1).padStart(6)} GFLOP/s by wall time, ${r.cpu.toFixed(1).padStart(6)} by CPU time`,
      );
    }
  }
  load.push(loadavg()[0]);
  console.log(`load average (1 min) ${load.map((l) => l.toFixed(2)).join(' -> ')}`);
}

void main();
