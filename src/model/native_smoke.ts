/**
 * Smoke test of a native build, run in a child process (`node --import tsx native_smoke.ts <cpu|gpu> <buildDir>`) so
 * the caller never loads TensorFlow itself: loads the build, checks that it registered with this project's
 * tfjs engine, and compares a seeded matmul with the pure-JS cpu backend. Prints one JSON line (SmokeResult).
 */
import * as tf from '@tensorflow/tfjs';
import { loadNativeBuild } from './native_backend';
import { NATIVE_VARIANTS } from './native_build';

/** What the smoke test printed. */
export interface SmokeResult {
  tfVersion: string;
  /** The shim folder it loaded through (the caller removes it for a temporary build). */
  shim: string;
  /** max |native - cpu| over a 64x48 @ 48x32 matmul. */
  maxAbsDiff: number;
  /** The device the binding computes on: 'GPU' or 'CPU'. */
  device: 'GPU' | 'CPU';
  /** The process mapped the host's CUDA driver (libcuda.so.1); false for the CPU build. */
  cudaDriver: boolean;
}

/** The matmul both backends compute (seeded, so both see the same operands). */
function product(): Float32Array {
  return tf.tidy(() => tf.matMul(tf.randomNormal([64, 48], 0, 1, 'float32', 1), tf.randomNormal([48, 32], 0, 1, 'float32', 2)).dataSync() as Float32Array);
}

async function main(variant: string, buildDir: string): Promise<void> {
  const v = NATIVE_VARIANTS.find((x) => x.variant === variant);
  if (!v) throw new Error(`native_smoke: variant "${variant}" is not one of ${NATIVE_VARIANTS.map((x) => x.variant).join(', ')}`);
  const load = loadNativeBuild(v, buildDir);
  await tf.setBackend('tensorflow');
  const native = product();
  await tf.setBackend('cpu');
  const cpu = product();
  const maxAbsDiff = native.reduce((m, v, i) => Math.max(m, Math.abs(v - (cpu[i] as number))), 0);
  const result: SmokeResult = { tfVersion: load.tfVersion, shim: load.shim, maxAbsDiff, device: load.gpu ? 'GPU' : 'CPU', cudaDriver: load.cudaDriver };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (require.main === module) {
  main(process.argv[2] as string, process.argv[3] as string).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
