import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { backendInfo, initBackend } from '../../../src/model/backend';
import { inspectNativeBuild, installCommand, NATIVE_VARIANTS, nativeBuildDir } from '../../../src/model/native_build';

test('backendInfo: refuses before initBackend, then names the active backend; wasm and cpu compute on the CPU', async () => {
  delete process.env.STARPO_BACKEND; // this file checks the backends it asks for itself
  assert.throws(() => backendInfo(), /await initBackend\(\) first/);
  assert.equal(await initBackend('cpu'), 'cpu');
  assert.deepEqual(backendInfo(), { backend: 'cpu', device: 'CPU' });
  assert.equal(await initBackend('wasm'), 'wasm');
  assert.deepEqual(backendInfo(), { backend: 'wasm', device: 'CPU' });
});

/** In a child process: initBackend(backend), then what backendInfo says, the GPU variables, and whether the other native build is refused. */
const CHILD = `
const b = require('./src/model/backend');
(async () => {
  await b.initBackend(process.argv[1]);
  const info = b.backendInfo();
  const other = await b.initBackend(process.argv[1] === 'tensorflow' ? 'tensorflow-gpu' : 'tensorflow').then(() => null, (e) => e.message);
  console.log(JSON.stringify({ info, growth: process.env.TF_FORCE_GPU_ALLOW_GROWTH ?? null, tf32: process.env.NVIDIA_TF32_OVERRIDE ?? null, other }));
})();
`;

for (const v of NATIVE_VARIANTS) {
  const skip =
    inspectNativeBuild(v).state === 'installed'
      ? false
      : `no ${v.variant.toUpperCase()} build in ${nativeBuildDir(v)}; run ${installCommand(v)}`;
  test(`backendInfo on ${v.backend} (in a child process): the device the binding chose; the GPU build says when it computes on CPU; the other build is refused`, {
    skip,
  }, () => {
    const env: NodeJS.ProcessEnv = { ...process.env, TF_FORCE_GPU_ALLOW_GROWTH: 'false' }; // a user's own setting
    delete env.STARPO_BACKEND;
    delete env.NVIDIA_TF32_OVERRIDE;
    const res = spawnSync(process.execPath, ['--import', 'tsx', '-e', CHILD, v.backend], { encoding: 'utf8', env, timeout: 120_000 });
    assert.equal(res.status, 0, res.stderr);
    const out = JSON.parse(res.stdout.trim().split('\n').pop() as string) as {
      info: { backend: string; device: string };
      growth: string;
      tf32: string | null;
      other: string;
    };
    assert.equal(out.info.backend, v.backend);
    assert.ok(['CPU', 'GPU'].includes(out.info.device), out.info.device);
    assert.equal(out.growth, 'false', 'the user setting wins');
    assert.equal(out.tf32, v.variant === 'gpu' ? '0' : null, 'the GPU build computes float32 matmuls in float32');
    assert.match(out.other, /is loaded in this process; @tensorflow\/tfjs-node(-gpu)? cannot be loaded beside it/);
    const noGpu = res.stderr.split('\n').filter((l) => l.startsWith('tensorflow-gpu: '));
    const expected =
      v.variant === 'gpu' && out.info.device === 'CPU' ? [`tensorflow-gpu: TensorFlow ${v.wheel.version} sees no GPU (`] : [];
    assert.deepEqual(
      noGpu.map((l) => l.slice(0, expected[0]?.length ?? 0)),
      expected,
      res.stderr,
    );
    if (noGpu.length > 0) assert.match(noGpu[0] as string, /\); computing on CPU$/);
  });
}
