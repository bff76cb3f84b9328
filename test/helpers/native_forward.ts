/**
 * Run as a child process by test/unit/model/native_backend.test.ts: the logits of a tiny random Qwen2 on wasm, then
 * on the native 'tensorflow' backend loaded from the cache. Prints one JSON line: the backends the project's
 * engine ran on, TensorFlow's version, max |native - wasm|, and the error asking for tfjs-node-gpu afterwards gives.
 */
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../src/model/backend';
import { tinyPreset } from '../../src/model/config';
import { Qwen2 } from '../../src/model/qwen2';

async function main(): Promise<void> {
  delete process.env.STARPO_BACKEND; // the argument of initBackend decides here
  const first = await initBackend('wasm');
  const m = Qwen2.random(tinyPreset(101), 7);
  const ids = tf.tensor2d(
    [
      [1, 10, 20, 30, 40, 50],
      [1, 5, 9, 13, 0, 0],
    ],
    [2, 6],
    'int32',
  );
  const mask = tf.tensor2d(
    [
      [1, 1, 1, 1, 1, 1],
      [1, 1, 1, 1, 0, 0],
    ],
    [2, 6],
    'float32',
  );
  const onWasm = m.forward(ids, mask).dataSync() as Float32Array;
  const second = await initBackend('tensorflow');
  const onNative = m.forward(ids, mask).dataSync() as Float32Array;
  const backend = tf.backend() as unknown as { binding?: { TF_Version?: string } };
  const maxAbsDiff = onNative.reduce((mx, v, i) => Math.max(mx, Math.abs(v - (onWasm[i] as number))), 0);
  const gpuRefused = await initBackend('tensorflow-gpu').then(
    () => null,
    (err: Error) => err.message,
  );
  process.stdout.write(
    `${JSON.stringify({ backends: [first, second], tfVersion: backend.binding?.TF_Version, logits: onNative.length, maxAbsDiff, gpuRefused })}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
