/**
 * The HF folder `starpo export` writes for a checkpoint of the `tiny` preset (char tokenizer, ChatML
 * template), with the fixture weights of hf_models.ts so that transformers can run the same model:
 * test/fixtures/hf/export_fixtures.py runs this file to write the folder, and records what
 * transformers 4 and 5 make of it in test/fixtures/hf/tiny_export.json.
 *
 *   npx tsx test/helpers/tiny_export.ts DIR
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tinyPreset, weightShapes } from '../../src/model/config';
import { hfFolderFiles } from '../../src/model/hf/folder';
import { encodeSafetensors, type SafeTensor } from '../../src/model/hf/safetensors';
import { configToJSONBytes } from '../../src/model/hf/weights';
import { charTokenizer } from '../../src/model/tokenizer';
import { fixtureWeights } from './hf_models';

/** The fixture's weight seed (fixtureWeights). */
export const TINY_EXPORT_SEED = 11;

/** The files of the exported folder, by name (model.safetensors included). */
export function tinyExportFiles(): Record<string, Uint8Array> {
  const tokenizer = charTokenizer();
  const config = tinyPreset(tokenizer.vocabSize);
  const tensors: Record<string, SafeTensor> = {};
  for (const [name, shape] of weightShapes(config)) {
    tensors[name] = {
      dtype: 'F32',
      shape,
      data: fixtureWeights(
        TINY_EXPORT_SEED,
        name,
        shape.reduce((a, b) => a * b, 1),
      ),
    };
  }
  return hfFolderFiles(
    {
      'model.safetensors': encodeSafetensors(tensors, { format: 'pt' }),
      'config.json': configToJSONBytes(config),
      'tokenizer.json': new TextEncoder().encode(JSON.stringify(tokenizer.toJSON())),
    },
    { max_new_tokens: 8, temperature: 0, top_p: 1, top_k: 0, do_sample: false, num_beams: 1, num_return_sequences: 1 },
  );
}

/** Writes the folder into `dir` (created when missing). */
export function writeTinyExport(dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, bytes] of Object.entries(tinyExportFiles())) writeFileSync(join(dir, name), bytes);
}

if (require.main === module) {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: npx tsx test/helpers/tiny_export.ts DIR');
  writeTinyExport(dir);
}
