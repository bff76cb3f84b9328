/**
 * `starpo backend status`: which tfjs backends this host can run, the native build in the cache, and which
 * backend each worker role uses. The native build is loaded in a child process (the smoke test), never here.
 */
import { folderBytes, mb } from '../../infra/install_progress';
import { DEFAULT_BACKEND, requestedBackend, type BackendName } from '../model/backend_choice';
import { inspectNativeBuild, type NativeBuildState } from '../model/native_build';
import { smokeTest } from './backend_install';
import { missingPrerequisites, probeHost, type HostFacts } from './native_host';

/** Everything `backend status` reports. */
export interface BackendStatus {
  host: { platform: string; arch: string; glibc: string | null; node: string };
  /** Per backend: whether this host can run it and why (not). */
  backends: Array<{ name: BackendName; usable: boolean; note: string }>;
  native: NativeBuildState & { bytes?: number };
  /** What `backend install` would still need here (empty: it can build). */
  missing: string[];
  /** The backend each role's worker would use with this environment (STARPO_BACKEND or the default). */
  roles: Record<'control' | 'rollout' | 'update', string>;
}

/** The native row: loads the build in a child process when there is one. */
async function nativeRow(native: NativeBuildState): Promise<{ usable: boolean; note: string }> {
  if (native.state === 'missing') return { usable: false, note: 'not installed: run `starpo backend install` (npm run backend:install)' };
  if (native.state === 'broken') return { usable: false, note: `${native.problem}; run \`starpo backend install --force\`` };
  try {
    const smoke = await smokeTest(native.dir);
    return { usable: true, note: `loads in a child process: TensorFlow ${smoke.tfVersion}, matmul equal to cpu within ${smoke.maxAbsDiff.toExponential(1)}` };
  } catch (err) {
    return { usable: false, note: (err as Error).message };
  }
}

/** Gathers the status (probes the host's tools; loads the native build in a child process). */
export async function backendStatus(env: NodeJS.ProcessEnv = process.env): Promise<BackendStatus> {
  const host: HostFacts = await probeHost();
  const inspected = inspectNativeBuild();
  const native = inspected.state === 'installed' ? { ...inspected, bytes: folderBytes(inspected.dir) } : inspected;
  const tensorflow = await nativeRow(inspected);
  const want = requestedBackend(env) ?? DEFAULT_BACKEND;
  const tensorWork = `${want}${env.STARPO_BACKEND ? ' (STARPO_BACKEND)' : ' (default)'}`;
  return {
    host: { platform: host.platform, arch: host.arch, glibc: host.glibc, node: process.version },
    backends: [
      { name: 'wasm', usable: true, note: DEFAULT_BACKEND === 'wasm' ? 'the default' : '' },
      { name: 'cpu', usable: true, note: 'pure JS, slow; the fallback when wasm cannot start' },
      { name: 'tensorflow', usable: tensorflow.usable, note: tensorflow.note },
      { name: 'tensorflow-gpu', usable: false, note: 'not built by starpo yet (the GPU variant of `backend install` is to come)' },
    ],
    native,
    missing: missingPrerequisites(host),
    roles: { control: 'none (workflows only, no tensor work)', rollout: tensorWork, update: tensorWork },
  };
}

/** Readable lines for a status. */
export function formatBackendStatus(s: BackendStatus): string[] {
  const lines = [`host: ${s.host.platform} ${s.host.arch}, glibc ${s.host.glibc ?? 'none'}, node ${s.host.node}`, '', 'backends:'];
  for (const b of s.backends) lines.push(`  ${b.name.padEnd(15)} ${b.usable ? 'yes' : 'no '}  ${b.note}`);
  lines.push('', `native build: ${s.native.dir}`);
  if (s.native.state === 'installed') {
    const m = s.native.manifest;
    lines.push(
      `  ${`@tensorflow/tfjs-node ${m.tfjsNode}`}, ${m.tensorflow.package} ${m.tensorflow.version} (${m.tensorflow.wheel}), N-API ${m.napiVersion}`,
      `  built ${m.builtAt} with node ${m.builtWith.node}, ${m.builtWith.compiler}, glibc ${m.builtWith.glibc}`,
      `  size ${mb(s.native.bytes ?? 0)} MB; install took ${Object.entries(m.seconds).map(([k, v]) => `${k} ${v} s`).join(', ')}`,
    );
  } else {
    lines.push(`  ${s.native.state}`);
  }
  lines.push('', s.missing.length === 0 ? 'build prerequisites: all present' : 'build prerequisites missing:', ...s.missing.map((m) => `  - ${m}`));
  lines.push('', 'worker roles use:', ...Object.entries(s.roles).map(([role, b]) => `  ${role.padEnd(8)} ${b}`));
  return lines;
}
