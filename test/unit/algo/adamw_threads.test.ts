/**
 * On a CPU host the optimizer step uses every core: native TensorFlow spreads each elementwise kernel of the clip
 * and AdamW over its thread pool. Seen from outside the kernels, as the CPU time each thread of this process
 * accumulates (/proc/self/task/<tid>/stat) while a step runs over weights large enough to be split.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { AdamW, clipByGlobalNorm } from '../../../src/algo/adamw';
import { backendInfo } from '../../../src/model/backend';
import { initTestBackend } from '../../helpers/backend';

let skip: string | false = false;

before(async () => {
  await initTestBackend();
  const { backend, device } = backendInfo();
  if (!backend.startsWith('tensorflow'))
    skip = `computes on ${backend}; the thread pool is native TensorFlow's (native_suite.test.ts runs this file there, or says why not)`;
  else if (device !== 'CPU') skip = `TensorFlow computes on the ${device} here, not on the CPU's cores`;
  else if (!existsSync('/proc/self/task')) skip = 'no /proc/self/task on this host (Linux procfs)';
});

/** CPU time (clock ticks, user + system) of each thread of this process, by thread id. */
function threadTicks(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    // Fields after the parenthesised name: state is field 3, utime 14 and stime 15 (proc(5)).
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(tid, Number(f[11]) + Number(f[12]));
  }
  return out;
}

test('a clip + AdamW step on native TensorFlow runs on more than one thread', { timeout: 300_000 }, (t) => {
  if (skip) return t.skip(skip);
  // Two 4M-entry weights: each kernel is large enough for TensorFlow to split across its pool.
  const shapes = [
    [2048, 2048],
    [4096, 1024],
  ];
  const params = new Map(
    shapes.map((s, i) => [`w${i}`, tf.tidy(() => tf.variable(tf.randomNormal(s, 0, 0.02, 'float32', i), true, `threads_w${i}`))]),
  );
  const grads = new Map(shapes.map((s, i) => [`w${i}`, tf.randomNormal(s, 0, 1, 'float32', 10 + i)]));
  const optimizer = new AdamW({ weightDecay: 0.1, params });
  const step = () => {
    const { scale } = clipByGlobalNorm(grads, 1);
    optimizer.applyGradients(grads, 1e-3, undefined, scale);
  };
  try {
    step(); // the moments are allocated
    const start = threadTicks();
    // Enough steps for a second of CPU time, so the tick counts (10 ms each) are well above their resolution.
    let grown = new Map<string, number>();
    for (let k = 0; k < 200; k++) {
      step();
      const now = threadTicks();
      grown = new Map([...now].map(([tid, ticks]) => [tid, ticks - (start.get(tid) ?? 0)]));
      if ([...grown.values()].reduce((a, b) => a + b, 0) >= 100) break;
    }
    const total = [...grown.values()].reduce((a, b) => a + b, 0);
    assert.ok(total >= 100, `the steps took ${total} ticks of CPU time`);
    // A thread that did at least a tenth of the work: the kernels' own threads, not a timer or the GC.
    const working = [...grown].filter(([, ticks]) => ticks >= total / 10);
    assert.ok(
      working.length >= 2,
      `CPU ticks by thread during the steps: ${JSON.stringify(Object.fromEntries([...grown].filter(([, x]) => x > 0)))}`,
    );
  } finally {
    optimizer.dispose();
    tf.dispose([...params.values(), ...grads.values()]);
  }
});
