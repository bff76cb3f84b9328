/** An optimizer's moments as a checkpoint stores them, read back from its optimizer.safetensors bytes. */
import type { AdamW } from '../../src/algo/adamw';
import { decodeSafetensors } from '../../src/model/hf/safetensors';

/** A parameter's first and second moments (float32, row-major in the parameter's shape). */
export interface Moments {
  shape: number[];
  m: Float32Array;
  v: Float32Array;
}

/** The moments of `opt` by parameter name. */
export async function momentsOf(opt: AdamW): Promise<Map<string, Moments>> {
  const { tensors } = decodeSafetensors(await opt.toSafetensors());
  const out = new Map<string, Moments>();
  for (const [key, t] of Object.entries(tensors)) {
    if (!key.startsWith('m.')) continue;
    const name = key.slice(2);
    out.set(name, { shape: [...t.shape], m: t.data as Float32Array, v: tensors[`v.${name}`].data as Float32Array });
  }
  return out;
}
