/**
 * `starpo backend status`: which tfjs backends this host can run, the native builds in the cache (CPU and GPU),
 * and which backend each worker role uses. A native build is loaded in a child process (the smoke test), never here.
 */
import { folderBytes, mb } from '../../infra/install_progress';
import {
  type BackendName,
  type ComputeRole,
  defaultBackend,
  hostBackends,
  requestedBackend,
  WASM_ROLLOUT_MAX_PARAMS,
} from '../model/backend_choice';
import { inspectNativeBuild, installCommand, NATIVE_VARIANTS, type NativeBuildState, type NativeVariant } from '../model/native_build';
import { smokeTest } from './backend_install';
import { type HostFacts, missingPrerequisites, probeHost } from './native_host';

/** Everything `backend status` reports. */
export interface BackendStatus {
  host: { platform: string; arch: string; glibc: string | null; node: string };
  /** Per backend: whether this host can run it and why (not). */
  backends: Array<{ name: BackendName; usable: boolean; note: string }>;
  /** The native builds in the cache, by variant. */
  native: Record<NativeVariant['variant'], NativeBuildState & { bytes?: number }>;
  /** What `backend install` would still need here (empty: it can build). */
  missing: string[];
  /** The backend each role's worker would use with this environment (STARPO_BACKEND or the default). */
  roles: Record<'control' | 'rollout' | 'update', string>;
}

/** A native backend's row: loads the build in a child process when there is one, and says the device it computes on. */
async function nativeRow(v: NativeVariant, native: NativeBuildState): Promise<{ usable: boolean; note: string }> {
  if (native.state === 'missing') return { usable: false, note: `not installed: run ${installCommand(v)}` };
  if (native.state === 'broken') return { usable: false, note: `${native.problem}; run ${installCommand(v, true)}` };
  try {
    const smoke = await smokeTest(v, native.dir);
    const device =
      v.variant === 'cpu' || smoke.device === 'GPU'
        ? smoke.device
        : `CPU (no GPU visible: ${smoke.cudaDriver ? 'the CUDA driver loaded but no device is usable' : 'no CUDA driver, libcuda.so.1 not found'})`;
    return {
      usable: true,
      note: `loads in a child process: TensorFlow ${smoke.tfVersion} on ${device}, matmul equal to cpu within ${smoke.maxAbsDiff.toExponential(1)}`,
    };
  } catch (err) {
    return { usable: false, note: (err as Error).message };
  }
}

/** Gathers the status (probes the host's tools; loads each native build in a child process, one after the other). */
export async function backendStatus(env: NodeJS.ProcessEnv = process.env): Promise<BackendStatus> {
  const host: HostFacts = await probeHost();
  const native = {} as BackendStatus['native'];
  const rows: BackendStatus['backends'] = [];
  for (const v of NATIVE_VARIANTS) {
    const inspected = inspectNativeBuild(v);
    native[v.variant] = inspected.state === 'installed' ? { ...inspected, bytes: folderBytes(inspected.dir) } : inspected;
    rows.push({ name: v.backend, ...(await nativeRow(v, inspected)) });
  }
  const offer = hostBackends();
  const uses = (role: ComputeRole) => {
    if (env.STARPO_BACKEND) return `${requestedBackend(env)} (STARPO_BACKEND)`;
    const unknown = defaultBackend(role, offer);
    const small = defaultBackend(role, offer, WASM_ROLLOUT_MAX_PARAMS);
    const note =
      small === unknown
        ? ''
        : `; ${small} for models up to ${WASM_ROLLOUT_MAX_PARAMS.toLocaleString('en-US')} parameters when \`starpo train\` starts the workers`;
    return `${unknown} (this host's default${note})`;
  };
  return {
    host: { platform: host.platform, arch: host.arch, glibc: host.glibc, node: process.version },
    backends: [
      { name: 'wasm', usable: true, note: 'needs nothing installed; the default without a native build' },
      { name: 'cpu', usable: true, note: 'pure JS, slow; the fallback when wasm cannot start' },
      ...rows,
    ],
    native,
    missing: missingPrerequisites(host),
    roles: { control: 'none (workflows only, no tensor work)', rollout: uses('rollout'), update: uses('update') },
  };
}

/** Readable lines for a status. */
export function formatBackendStatus(s: BackendStatus): string[] {
  const lines = [`host: ${s.host.platform} ${s.host.arch}, glibc ${s.host.glibc ?? 'none'}, node ${s.host.node}`, '', 'backends:'];
  for (const b of s.backends) lines.push(`  ${b.name.padEnd(15)} ${b.usable ? 'yes' : 'no '}  ${b.note}`);
  for (const v of NATIVE_VARIANTS) {
    const build = s.native[v.variant];
    lines.push('', `native ${v.variant.toUpperCase()} build (${v.backend}): ${build.dir}`);
    if (build.state !== 'installed') {
      lines.push(`  ${build.state}`);
      continue;
    }
    const m = build.manifest;
    const cuda = Object.keys(m.cudaWheels).length;
    lines.push(
      `  ${v.tfjsNode.name} ${m.tfjsNode}, ${m.tensorflow.package} ${m.tensorflow.version} (${m.tensorflow.wheel}), N-API ${m.napiVersion}`,
      ...(cuda > 0
        ? [
            `  ${cuda} CUDA wheels: ${Object.entries(m.cudaWheels)
              .map(([name, w]) => `${name.replace(/^nvidia-|-cu12$/g, '')} ${w.version}`)
              .join(', ')}`,
          ]
        : []),
      `  built ${m.builtAt} with node ${m.builtWith.node}, ${m.builtWith.compiler}, glibc ${m.builtWith.glibc}`,
      `  size ${mb(build.bytes ?? 0)} MB; install took ${Object.entries(m.seconds)
        .map(([k, sec]) => `${k} ${sec} s`)
        .join(', ')}`,
    );
  }
  lines.push(
    '',
    s.missing.length === 0 ? 'build prerequisites: all present' : 'build prerequisites missing:',
    ...s.missing.map((m) => `  - ${m}`),
  );
  lines.push('', 'worker roles use:', ...Object.entries(s.roles).map(([role, b]) => `  ${role.padEnd(8)} ${b}`));
  return lines;
}
