import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { pipDownloadArgs } from '../../../infra/wheels';
import { nodeGypArgs, unpackRules } from '../../../src/cli/backend_install';
import { exitCodeOf } from '../../../src/cli/exit_codes';
import { type HostFacts, missingPrerequisites, versionAtLeast } from '../../../src/cli/native_host';
import { noGpuLine } from '../../../src/model/backend';
import { canonicalBackend, requestedBackend, UnknownBackendError } from '../../../src/model/backend_choice';
import { ensureShim } from '../../../src/model/native_backend';
import {
  BINDING_FILE,
  inspectNativeBuild,
  MANIFEST_FILE,
  NATIVE_CPU,
  NATIVE_GPU,
  NATIVE_LIBRARIES,
  NATIVE_VARIANTS,
  type NativeManifest,
  type NativeVariant,
  nativeBuildDir,
  nativeBuildName,
  requireInstalled,
  variantOf,
} from '../../../src/model/native_build';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'starpo-native-'));

test('pins: tfjs-node(-gpu) is the version of the tfjs this project resolves; every wheel file matches its name, version, tags', () => {
  const core = require('@tensorflow/tfjs-core/package.json') as { version: string };
  for (const v of NATIVE_VARIANTS) {
    assert.equal(v.tfjsNode.version, core.version);
    assert.equal(variantOf(v.backend), v);
    const w = v.wheel;
    assert.equal(w.file, `${w.name.replace('-', '_')}-${w.version}-cp${w.pythonVersion}-cp${w.pythonVersion}-${w.platform}.whl`);
    assert.ok(w.platform.startsWith(`manylinux_${v.minGlibc.replace('.', '_')}_`), 'minGlibc is the wheel tag');
    for (const c of [w, ...v.cudaWheels]) assert.match(c.sha256, /^[0-9a-f]{64}$/, c.name);
  }
  assert.deepEqual(
    [NATIVE_CPU.tfjsNode.name, NATIVE_CPU.wheel.name, NATIVE_CPU.cudaWheels.length],
    ['@tensorflow/tfjs-node', 'tensorflow-cpu', 0],
  );
  assert.deepEqual([NATIVE_GPU.tfjsNode.name, NATIVE_GPU.wheel.name], ['@tensorflow/tfjs-node-gpu', 'tensorflow']);
  assert.equal(NATIVE_GPU.wheel.version, NATIVE_CPU.wheel.version, 'both builds run the same TensorFlow');
  for (const c of NATIVE_GPU.cudaWheels) {
    assert.ok(c.file.startsWith(`${c.name.replace(/-/g, '_')}-${c.version}-py3-none-${c.platform}`), c.file);
    assert.match(c.name, /^nvidia-[a-z-]+-cu12$/, 'CUDA 12 builds');
  }
  const version = (dir: string) => NATIVE_GPU.cudaWheels.find((c) => c.dir === dir)?.version ?? '';
  assert.match(version('cuda_runtime'), /^12\./);
  assert.match(version('cudnn'), /^9\./);
  assert.equal(new Set(NATIVE_GPU.cudaWheels.map((c) => c.dir)).size, NATIVE_GPU.cudaWheels.length, 'one folder per wheel');
  assert.equal(BINDING_FILE, 'lib/napi-v8/tfjs_binding.node');
});

test('paths: each build folder is under <cache>/native and its name carries every pin (the CUDA wheels through a hash)', () => {
  const cpu = nativeBuildDir(NATIVE_CPU, '/c');
  assert.equal(path.dirname(cpu), '/c/native');
  for (const pin of [NATIVE_CPU.tfjsNode.version, NATIVE_CPU.wheel.name, NATIVE_CPU.wheel.version, `napi${NATIVE_CPU.napiVersion}`])
    assert.ok(path.basename(cpu).includes(pin), pin);
  const gpu = path.basename(nativeBuildDir(NATIVE_GPU, '/c'));
  assert.match(gpu, /^tfjs-node-gpu-4\.22\.0-tensorflow-2\.21\.0-cuda12\.[\d.]+-cudnn9\.[\d.]+-[0-9a-f]{8}-napi8$/);
  const bumped: NativeVariant = {
    ...NATIVE_GPU,
    cudaWheels: NATIVE_GPU.cudaWheels.map((c, i) => (i === 4 ? { ...c, sha256: 'f'.repeat(64) } : c)),
  };
  assert.notEqual(nativeBuildName(bumped), gpu, 'another CUDA wheel, another folder');
});

test('commands: pip fetches exactly each pinned wheel whatever Python runs it; node-gyp uses local headers and napi-v8', () => {
  const pip = pipDownloadArgs(NATIVE_CPU.wheel, '/d', NATIVE_CPU.wheel.pythonVersion).join(' ');
  assert.match(
    pip,
    /-m pip download tensorflow-cpu==2\.21\.0 --no-deps --only-binary=:all: --python-version 311 --implementation cp --platform manylinux_2_27_x86_64 --dest \/d/,
  );
  const cublas = NATIVE_GPU.cudaWheels.find((c) => c.dir === 'cublas');
  assert.match(
    pipDownloadArgs(cublas as NativeVariant['cudaWheels'][number], '/d', NATIVE_GPU.wheel.pythonVersion).join(' '),
    /download nvidia-cublas-cu12==12\.5\.3\.2 .* --platform manylinux2014_x86_64 /,
  );
  const gyp = nodeGypArgs('/b', '/usr');
  assert.equal(gyp[0], 'rebuild');
  assert.ok(gyp.includes('--nodedir=/usr'));
  assert.ok(gyp.includes('--napi_build_version=8'));
  assert.ok(gyp.includes('--module_path=/b/lib/napi-v8'));
});

test("unpacking: the CPU build takes TensorFlow's libraries and headers; the GPU build adds each CUDA wheel's lib folder where the RUNPATH looks", () => {
  assert.deepEqual([...unpackRules(NATIVE_CPU, '/b').keys()], [NATIVE_CPU.wheel.file]);
  const rules = unpackRules(NATIVE_GPU, '/b');
  assert.equal(rules.size, 1 + NATIVE_GPU.cudaWheels.length);
  const [libs, headers] = rules.get(NATIVE_GPU.wheel.file) ?? [];
  assert.deepEqual(libs, { from: 'tensorflow/', patterns: [...NATIVE_LIBRARIES], to: '/b/deps/lib' });
  assert.equal(headers?.to, '/b/deps/include');
  for (const c of NATIVE_GPU.cudaWheels) {
    const [rule] = rules.get(c.file) ?? [];
    assert.deepEqual(rule, { from: 'nvidia/', patterns: [`${c.dir}/lib/lib*.so*`], to: '/b/deps/nvidia' });
    // libtensorflow_framework.so.2 (in deps/lib) has RUNPATH $ORIGIN/../nvidia/<dir>/lib.
    assert.equal(path.join('/b/deps/lib', '..', 'nvidia', c.dir, 'lib'), path.join(rule?.to ?? '', c.dir, 'lib'));
  }
});

test('no-GPU line: names TensorFlow, why no GPU is seen (no driver, or a driver without a usable device) and that it computes on CPU', () => {
  assert.equal(
    noGpuLine({ tfVersion: '2.21.0', cudaDriver: false }, {}),
    'tensorflow-gpu: TensorFlow 2.21.0 sees no GPU (no CUDA driver: libcuda.so.1 not found); computing on CPU',
  );
  assert.equal(
    noGpuLine({ tfVersion: '2.21.0', cudaDriver: true }, { CUDA_VISIBLE_DEVICES: '' }),
    'tensorflow-gpu: TensorFlow 2.21.0 sees no GPU (the CUDA driver loaded but no device is usable, CUDA_VISIBLE_DEVICES=""); computing on CPU',
  );
});

/** A build folder of variant `v` with small stand-in files and a manifest recording their sizes. */
function fakeBuild(dir: string, patch: Partial<NativeManifest> = {}, v: NativeVariant = NATIVE_CPU): NativeManifest {
  const files: NativeManifest['files'] = {};
  const cudaLibs = v.cudaWheels.map((c) => `deps/nvidia/${c.dir}/lib/lib${c.dir}.so`);
  for (const rel of [BINDING_FILE, ...NATIVE_LIBRARIES.map((l) => `deps/lib/${l}`), ...cudaLibs]) {
    fs.mkdirSync(path.join(dir, path.dirname(rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), rel);
    files[rel] = { bytes: Buffer.byteLength(rel), sha256: '0'.repeat(64) };
  }
  const manifest: NativeManifest = {
    format: 1,
    variant: v.variant,
    tfjsNode: v.tfjsNode.version,
    tensorflow: { package: v.wheel.name, version: v.wheel.version, wheel: v.wheel.file, wheelSha256: v.wheel.sha256 },
    napiVersion: v.napiVersion,
    cudaWheels: Object.fromEntries(v.cudaWheels.map((c) => [c.name, { version: c.version, wheel: c.file, sha256: c.sha256 }])),
    builtWith: { node: 'v20', nodedir: '/usr', compiler: 'g++', glibc: '2.36' },
    builtAt: '2026-01-01T00:00:00Z',
    seconds: { compile: 1 },
    runtimeDeps: {},
    files,
    ...patch,
  };
  fs.writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify(manifest));
  return manifest;
}

test('manifest: missing, installed, and broken builds (bad JSON, other pins, a file of another size) say which', () => {
  const dir = path.join(tmp(), 'build');
  assert.equal(inspectNativeBuild(NATIVE_CPU, dir).state, 'missing');
  assert.throws(
    () => requireInstalled(NATIVE_CPU, dir),
    (e: Error) =>
      e.name === 'NativeBackendError' && e.message.includes(dir) && e.message.includes('starpo backend install') && exitCodeOf(e) === 3,
  );
  const manifest = fakeBuild(dir);
  const ok = inspectNativeBuild(NATIVE_CPU, dir);
  assert.equal(ok.state, 'installed');
  assert.deepEqual(ok.state === 'installed' && ok.manifest, manifest);

  fs.appendFileSync(path.join(dir, 'deps/lib/libtensorflow_cc.so.2'), 'x');
  const grown = inspectNativeBuild(NATIVE_CPU, dir);
  assert.equal(grown.state, 'broken');
  assert.match(grown.state === 'broken' ? grown.problem : '', /libtensorflow_cc\.so\.2 is \d+ bytes, the manifest says \d+/);
  assert.throws(() => requireInstalled(NATIVE_CPU, dir), /starpo backend install --force/);

  fakeBuild(dir, { tfjsNode: '4.0.0' });
  const other = inspectNativeBuild(NATIVE_CPU, dir);
  assert.match(other.state === 'broken' ? other.problem : '', /built from .*4\.0\.0.*not the pinned/);

  fs.writeFileSync(path.join(dir, MANIFEST_FILE), '{"format":1');
  const bad = inspectNativeBuild(NATIVE_CPU, dir);
  assert.match(bad.state === 'broken' ? bad.problem : '', /is not a valid manifest/);
});

test('manifest of the GPU build: its CUDA wheels are pinned and their libraries checked; a CPU build is not a GPU build; messages name --gpu', () => {
  const dir = path.join(tmp(), 'gpu');
  assert.throws(
    () => requireInstalled(NATIVE_GPU, dir),
    (e: Error) => e.message.includes('tensorflow-gpu') && e.message.includes('`starpo backend install --gpu`') && exitCodeOf(e) === 3,
  );
  fakeBuild(dir, {}, NATIVE_GPU);
  assert.equal(inspectNativeBuild(NATIVE_GPU, dir).state, 'installed');
  assert.match(
    (inspectNativeBuild(NATIVE_CPU, dir) as { problem: string }).problem,
    /"variant":"gpu".*not the pinned \{"variant":"cpu"/,
    'a GPU build is not the CPU build',
  );

  fs.rmSync(path.join(dir, 'deps/nvidia/cudnn/lib/libcudnn.so'));
  assert.match((inspectNativeBuild(NATIVE_GPU, dir) as { problem: string }).problem, /libcudnn\.so is missing/);
  assert.throws(() => requireInstalled(NATIVE_GPU, dir), /`starpo backend install --gpu --force`/);

  const fewer = fakeBuild(dir, {}, NATIVE_GPU);
  delete fewer.cudaWheels['nvidia-nccl-cu12'];
  fs.writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify(fewer));
  assert.match((inspectNativeBuild(NATIVE_GPU, dir) as { problem: string }).problem, /was built from .*not the pinned .*nccl/);

  const cpu = path.join(tmp(), 'cpu');
  fakeBuild(cpu); // a CPU manifest written before the CUDA field existed parses as "no CUDA wheels"
  const old = JSON.parse(fs.readFileSync(path.join(cpu, MANIFEST_FILE), 'utf8')) as Record<string, unknown>;
  delete old.cudaWheels;
  fs.writeFileSync(path.join(cpu, MANIFEST_FILE), JSON.stringify(old));
  assert.equal(inspectNativeBuild(NATIVE_CPU, cpu).state, 'installed');
  assert.equal(inspectNativeBuild(NATIVE_GPU, cpu).state, 'broken');
});

const host: HostFacts = {
  platform: 'linux',
  arch: 'x64',
  glibc: '2.36',
  python: 'python3',
  compiler: 'g++ 12',
  make: true,
  npm: true,
  nodedir: '/usr',
  nodeHeaders: true,
  nodeGyp: '/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
};

test('prerequisites: none missing on a complete host; each missing tool is named with how to get it', () => {
  assert.deepEqual(missingPrerequisites(host), []);
  const one = (patch: Partial<HostFacts>) => {
    const out = missingPrerequisites({ ...host, ...patch });
    assert.equal(out.length, 1, JSON.stringify(out));
    return out[0] as string;
  };
  assert.match(one({ python: null }), /^pip: .*apt-get install python3-pip/);
  assert.match(one({ compiler: null }), /^a C\+\+ compiler: .*apt-get install g\+\+/);
  assert.match(one({ make: false }), /^make: .*apt-get install make/);
  assert.match(one({ npm: false }), /^npm: /);
  assert.match(one({ nodeHeaders: false }), /^Node's headers: \/usr\/include\/node\/node_api\.h is missing; .*libnode-dev/);
  assert.match(one({ nodeGyp: null }), /^node-gyp: .*npm run backend:install/);
  assert.match(one({ glibc: '2.17' }), /^glibc 2\.17 is too old: .*>= 2\.27/);
  assert.match(one({ glibc: null }), /^glibc: .*musl/);
  assert.match(one({ platform: 'darwin', arch: 'arm64', python: null }), /linux x64 only.*darwin arm64: use the wasm backend/);
  assert.ok(versionAtLeast('2.27', '2.27') && versionAtLeast('2.36', '2.27') && !versionAtLeast('2.9', '2.27'));
});

test('backend choice: STARPO_BACKEND wins over the caller; package names are accepted; an unknown name exits 2', () => {
  assert.equal(requestedBackend({}), undefined);
  assert.equal(requestedBackend({}, 'wasm'), 'wasm');
  assert.equal(requestedBackend({ STARPO_BACKEND: 'tfjs-node' }, 'wasm'), 'tensorflow');
  assert.equal(canonicalBackend('tfjs-node-gpu'), 'tensorflow-gpu');
  assert.throws(
    () => requestedBackend({ STARPO_BACKEND: 'tpu' }),
    (e: Error) =>
      e instanceof UnknownBackendError &&
      /^STARPO_BACKEND: backend "tpu" is not known; allowed: tensorflow-gpu, tensorflow, wasm, cpu/.test(e.message) &&
      exitCodeOf(e) === 2,
  );
});

/** A fake build with tfjs-node's shape: package.json, dist/ with an index.js reporting the tfjs-core it resolves. */
function fakePackage(dir: string): NativeManifest {
  const manifest = fakeBuild(dir);
  fs.mkdirSync(path.join(dir, 'dist', 'io'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), '{"name":"@tensorflow/tfjs-node","main":"dist/index.js"}');
  fs.writeFileSync(path.join(dir, 'dist', 'index.js'), "module.exports = require.resolve('@tensorflow/tfjs-core');");
  fs.writeFileSync(path.join(dir, 'dist', 'io', 'file.js'), '');
  fs.writeFileSync(path.join(dir, 'dist', 'index_test.js'), '');
  fs.writeFileSync(path.join(dir, 'dist', 'index.d.ts'), '');
  fs.mkdirSync(path.join(dir, 'node_modules'));
  return manifest;
}

test("shim: tfjs-node's JS is copied where it resolves this project's tfjs-core, with symlinks to the build; orphans go", () => {
  const dir = path.join(tmp(), 'build');
  const manifest = fakePackage(dir);
  const shim = ensureShim(dir, manifest);
  const parent = path.dirname(shim);
  try {
    assert.equal(ensureShim(dir, manifest), shim, 'reused');
    assert.equal(parent, path.resolve('node_modules', '.cache', 'starpo-native'));
    assert.equal(require(shim), require.resolve('@tensorflow/tfjs-core'), 'the same tfjs-core file');
    assert.ok(fs.existsSync(path.join(shim, 'dist', 'io', 'file.js')));
    assert.ok(
      !fs.existsSync(path.join(shim, 'dist', 'index_test.js')) && !fs.existsSync(path.join(shim, 'dist', 'index.d.ts')),
      'JS only, no tests',
    );
    for (const link of ['lib', 'deps', 'node_modules'])
      assert.equal(fs.readlinkSync(path.join(shim, link)), path.join(fs.realpathSync(dir), link));
    const rebuilt = ensureShim(dir, { ...manifest, builtAt: 'later' });
    assert.notEqual(rebuilt, shim, 'a rebuilt build gets a fresh shim');
    assert.ok(fs.existsSync(shim), 'a shim whose build exists stays');
    fs.rmSync(dir, { recursive: true });
    const other = path.join(tmp(), 'build');
    ensureShim(other, fakePackage(other));
    assert.ok(!fs.existsSync(shim) && !fs.existsSync(rebuilt), 'shims of a deleted build are removed');
  } finally {
    for (const entry of fs.readdirSync(parent))
      if (entry.startsWith('build-')) fs.rmSync(path.join(parent, entry), { recursive: true, force: true });
  }
});

const installed = inspectNativeBuild(NATIVE_CPU).state === 'installed';
test('native backend (skipped unless `starpo backend install` has run): a tiny model forward pass on it equals wasm within 1e-5, in a child process that then refuses tfjs-node-gpu', {
  skip: installed ? false : `no native build in ${nativeBuildDir(NATIVE_CPU)}; run \`starpo backend install\``,
}, () => {
  const env = { ...process.env };
  delete env.STARPO_BACKEND;
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'test/helpers/native_forward.ts'], {
    encoding: 'utf8',
    env,
    timeout: 120_000,
  });
  const line = res.stdout.split('\n').find((l) => l.startsWith('{'));
  assert.equal(res.status, 0, res.stderr);
  const out = JSON.parse(line as string) as {
    backends: string[];
    tfVersion: string;
    logits: number;
    maxAbsDiff: number;
    gpuRefused: string | null;
  };
  assert.deepEqual(out.backends, ['wasm', 'tensorflow'], "the project's engine runs on the backend tfjs-node registered");
  assert.equal(out.tfVersion, NATIVE_CPU.wheel.version);
  assert.ok(out.logits > 1000);
  assert.ok(out.maxAbsDiff <= 1e-5, `max |native - wasm| = ${out.maxAbsDiff}`);
  assert.equal(
    out.gpuRefused,
    '@tensorflow/tfjs-node is loaded in this process; @tensorflow/tfjs-node-gpu cannot be loaded beside it (same library names)',
  );
});
