/**
 * `starpo generate`: a first look at a model starpo can load (an HF folder, a run's checkpoint, the
 * `tiny` preset). The prompt (one user message, or a chat) is rendered with the model's own chat
 * template and generation prompt, as rollouts render it; the reply is generated greedily or sampled with
 * the generating_args keys (the run's, or the config defaults, each replaceable by a flag), or with
 * `--score` a given reply is scored token by token. `--json` gives the ids and log-probs that
 * test/fixtures/hf/check_export.py compares with transformers.
 */
import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { clip } from '../config/show';
import type { GeneratingArgs } from '../contract';
import { generatingArgsSchema } from '../contract';
import { initBackend } from '../model/backend';
import { defaultBackend, hostBackends } from '../model/backend_choice';
import { activeSlidingWindow, countParams, type Qwen2Config, TINY_PRESET, tinyPreset } from '../model/config';
import { generate } from '../model/generate';
import { pretrainedProblems, readPretrainedConfig } from '../model/hf/folder';
import { ADAPTER_WEIGHTS } from '../model/hf/peft_config';
import { tokenizerFromFiles } from '../model/hf/tokenizer';
import { configFromJSONBytes, modelFromFolder, modelFromSafetensors } from '../model/hf/weights';
import { Qwen2 } from '../model/qwen2';
import { logSumExp } from '../model/sampling';
import { type ChatMessage, type ChatTokenizer, charTokenizer } from '../model/tokenizer';
import type { ObjectStore } from '../storage/object_store';
import { loadCheckpoint } from '../storage/policy_checkpoint';
import { deriveSeed, Rng } from '../util/rng';
import { BadInputError } from './exit_codes';
import { checkInputFile } from './file_args';
import { loadRunSpec } from './known_run';
import { pickCheckpoint } from './pick_checkpoint';

/** The generating_args keys a flag may replace (flag --max-new-tokens for max_new_tokens, ...). */
export type GeneratingFlags = Partial<Pick<GeneratingArgs, 'max_new_tokens' | 'temperature' | 'top_p' | 'top_k' | 'do_sample'>>;

/** A loaded model: its tokenizer (chat template, stop ids), what it is, and the run's generating_args. */
export interface LoadedModel {
  model: Qwen2;
  tokenizer: ChatTokenizer;
  /** "tiny (seed 42)", the folder, or "run <id> step <n>". */
  source: string;
  /** The run's actor_infer.generating_args (runs only). */
  generating?: GeneratingArgs;
}

/** What the command computed; `--json` prints it as is. */
export interface GenerateOutput {
  mode: 'generate' | 'score';
  model: string;
  messages: ChatMessage[];
  /** The rendered prompt (chat template, generation prompt added) and its ids. */
  prompt: string;
  prompt_ids: number[];
  /** The generated (or scored) ids, a sampled stop id included, their text and their log-probs (nats, temperature 1). */
  ids: number[];
  text: string;
  logprobs: number[];
  /** generate only: the settings used, and whether it ended on a stop id. */
  generating_args?: GeneratingArgs;
  seed?: number;
  stopped?: boolean;
}

const ROLES = ['system', 'user', 'assistant'];
/** What --chat takes, for messages. */
const CHAT = 'a JSON list of {role, content}';
/** The largest --chat file read: a prompt far past any model's context is a mistake, not a chat. */
const MAX_CHAT_BYTES = 1024 * 1024;

/**
 * The messages of `--prompt TEXT` (one user message) or `--chat FILE|-` (a JSON list of {role, content}).
 * @throws BadInputError when neither or both are given, or the chat is not such a list (naming the entry)
 */
export function readMessages(
  opts: { prompt?: string; chat?: string },
  readStdin: () => string = () => readFileSync(0, 'utf8'),
): ChatMessage[] {
  if ((opts.prompt === undefined) === (opts.chat === undefined))
    throw new BadInputError('give either --prompt TEXT or --chat FILE (a JSON list of {role, content}; - reads stdin)');
  if (opts.prompt !== undefined) return [{ role: 'user', content: opts.prompt }];
  const where = opts.chat === '-' ? '--chat - (stdin)' : `--chat ${opts.chat}`;
  let value: unknown;
  try {
    value = JSON.parse(
      opts.chat === '-' ? readStdin() : readFileSync(checkInputFile('--chat', opts.chat as string, CHAT, MAX_CHAT_BYTES), 'utf8'),
    );
  } catch (err) {
    if (err instanceof BadInputError) throw err;
    throw new BadInputError(`${where}: ${clip((err as Error).message)}; allowed: ${CHAT}`);
  }
  if (!Array.isArray(value) || value.length === 0)
    throw new BadInputError(`${where}: not a non-empty JSON list; allowed: a JSON list of {role, content}`);
  return value.map((m, i) => {
    const { role, content } = (m ?? {}) as { role?: unknown; content?: unknown };
    if (typeof role !== 'string' || !ROLES.includes(role) || typeof content !== 'string') {
      throw new BadInputError(
        `${where}: entry ${i} is ${clip(JSON.stringify(m) ?? String(m))}; allowed: {role: ${ROLES.join('|')}, content: a string}`,
      );
    }
    return { role: role as ChatMessage['role'], content };
  });
}

/**
 * The generating_args used: `base` (the run's, else the config defaults) with the flags given.
 * @throws BadInputError naming the flag and what is allowed (the config's own bounds)
 */
export function generatingArgs(base: GeneratingArgs | undefined, flags: GeneratingFlags): GeneratingArgs {
  const given = Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined));
  const parsed = generatingArgsSchema.safeParse({ ...(base ?? generatingArgsSchema.parse({})), ...given });
  if (parsed.success) return parsed.data;
  throw new BadInputError(parsed.error.issues.map((i) => `--${String(i.path[0]).replace(/_/g, '-')}: ${i.message}`).join('; '));
}

/** The backend a rollout worker of this host generates with for a model of `cfg` (STARPO_BACKEND wins). */
function initGenerationBackend(cfg: Qwen2Config): Promise<string> {
  return initBackend(defaultBackend('rollout', hostBackends(), countParams(cfg)));
}

/**
 * Loads `--model DIR|tiny` or `--run <id> [--step N]` (the tfjs backend initialised first). A folder
 * is checked as `config check` checks `pretrain` before any model is built; `tiny` is the preset's
 * seeded random init (the run's step-0 policy before its warm-up, for the same seed).
 * @param store the object store (runs only)
 * @throws BadInputError listing every problem of a folder; the errors of loadRunSpec / pickCheckpoint for a run
 */
export async function loadModel(
  opts: { model?: string; run?: string; step?: number; seed: number },
  store: () => Promise<ObjectStore>,
  log: (line: string) => void,
): Promise<LoadedModel> {
  if ((opts.model === undefined) === (opts.run === undefined))
    throw new BadInputError('give either --model DIR|tiny or --run <runId> [--step N]');
  if (opts.step !== undefined && opts.run === undefined) throw new BadInputError(`--step ${opts.step}: only with --run <runId>`);
  if (opts.model !== undefined && opts.model !== TINY_PRESET) {
    const problems = pretrainedProblems(opts.model, 1);
    if (problems.length > 0)
      throw new BadInputError(`--model ${opts.model}: not a model starpo can load\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
  if (opts.model === TINY_PRESET) {
    const tokenizer = charTokenizer();
    const cfg = tinyPreset(tokenizer.vocabSize);
    await initGenerationBackend(cfg);
    return { model: Qwen2.random(cfg, deriveSeed(opts.seed, 'init')), tokenizer, source: `tiny (seed ${opts.seed})` };
  }
  if (opts.model !== undefined) {
    await initGenerationBackend(readPretrainedConfig(opts.model));
    return { ...modelFromFolder(opts.model), source: opts.model };
  }
  const s = await store();
  const runId = opts.run as string;
  const spec = await loadRunSpec(s, runId);
  const checkpoint = await pickCheckpoint(s, runId, opts.step, opts.step === undefined ? `--run ${runId}` : `--step ${opts.step}`, log);
  const { files } = checkpoint;
  const cfg = configFromJSONBytes(files['config.json'] as Uint8Array);
  await initGenerationBackend(cfg);
  // A LoRA run's checkpoint holds adapters only: its base comes from the store with them.
  const model = files[ADAPTER_WEIGHTS]
    ? (await loadCheckpoint(s, checkpoint.ref)).model
    : modelFromSafetensors(cfg, files['model.safetensors'] as Uint8Array);
  return {
    model,
    tokenizer: tokenizerFromFiles(files, (name) => `${checkpoint.ref.key}: ${name}`),
    source: `run ${runId} step ${checkpoint.step}`,
    generating: spec.config.actor_infer.generating_args,
  };
}

/**
 * The prompt of `messages` as rollouts render it (chat template with the generation prompt) and its ids.
 * @throws BadInputError when the template refuses the messages (its raise_exception)
 */
function renderPrompt(tokenizer: ChatTokenizer, messages: ChatMessage[]): { prompt: string; ids: number[] } {
  let prompt: string;
  try {
    prompt = tokenizer.chat.render(messages, true);
  } catch (err) {
    throw new BadInputError(`the model's chat template refuses these messages: ${(err as Error).message}`);
  }
  return { prompt, ids: tokenizer.encode(prompt) };
}

/**
 * @throws BadInputError when prompt + `more` tokens do not fit the model's context: max_position_embeddings,
 *   or an active sliding window (not implemented; config check refuses it against sequence_length alike)
 */
function checkLength(m: LoadedModel, promptLength: number, more: number, what: string): void {
  const total = `the prompt's ${promptLength} tokens + ${what} ${more}`;
  const max = m.model.config.max_position_embeddings;
  if (promptLength + more > max) throw new BadInputError(`${total} are more than the model's max_position_embeddings (${max})`);
  const sliding = activeSlidingWindow(m.model.config);
  if (sliding && promptLength + more > sliding.window) {
    throw new BadInputError(
      `${total} are more than the model's active sliding_window (${sliding.window}; ${sliding.because}); sliding-window attention is not implemented`,
    );
  }
}

/**
 * Generates a reply to `messages`: greedy when do_sample is false or temperature 0, else sampled from
 * one stream seeded by `seed`. Stops at the tokenizer's stop ids or after max_new_tokens.
 * @throws BadInputError when prompt + max_new_tokens exceed the model's context
 */
export function generateReply(m: LoadedModel, messages: ChatMessage[], args: GeneratingArgs, seed: number): GenerateOutput {
  const { prompt, ids: promptIds } = renderPrompt(m.tokenizer, messages);
  checkLength(m, promptIds.length, args.max_new_tokens, '--max-new-tokens');
  const out = generate(m.model, [promptIds], {
    maxNewTokens: args.max_new_tokens,
    stopIds: m.tokenizer.eosIds,
    doSample: args.do_sample,
    temperature: args.temperature,
    topP: args.top_p,
    topK: args.top_k,
    rngs: [new Rng(seed, 'generate')],
  });
  const ids = out.tokens[0] as number[];
  return {
    mode: 'generate',
    model: m.source,
    messages,
    prompt,
    prompt_ids: promptIds,
    ids,
    text: m.tokenizer.decode(ids),
    logprobs: out.logprobs[0] as number[],
    generating_args: args,
    seed,
    stopped: ids.length > 0 && m.tokenizer.eosIds.includes(ids[ids.length - 1] as number),
  };
}

/**
 * The log-prob of every token of `continuation` (tokenized on its own, as rollouts keep a reply's ids)
 * after the prompt of `messages`, from one forward pass (nats, temperature 1, like generate's).
 * @throws BadInputError when the continuation is empty or does not fit the context
 */
export function scoreReply(m: LoadedModel, messages: ChatMessage[], continuation: string): GenerateOutput {
  const { prompt, ids: promptIds } = renderPrompt(m.tokenizer, messages);
  const ids = m.tokenizer.encode(continuation);
  if (ids.length === 0) throw new BadInputError('--score: the text has no tokens');
  checkLength(m, promptIds.length, ids.length, '--score tokens');
  const all = [...promptIds, ...ids];
  // log-softmax on the host in float64 (sampling.ts logSumExp), as generate's log-probs are computed
  const V = m.model.config.vocab_size;
  const input = tf.tensor2d([all], [1, all.length], 'int32');
  const mask = tf.ones([1, all.length], 'float32') as tf.Tensor2D;
  const logits = m.model.forward(input, mask);
  const rows = tf.slice(logits, [0, promptIds.length - 1, 0], [1, ids.length, V]);
  const data = rows.dataSync();
  tf.dispose([input, mask, logits, rows]);
  const values = ids.map((id, i) => (data[i * V + id] as number) - logSumExp(data, i * V, V));
  return { mode: 'score', model: m.source, messages, prompt, prompt_ids: promptIds, ids, text: m.tokenizer.decode(ids), logprobs: values };
}

/** The text output: the reply (generate), or one line per scored token and their sum (score). */
export function formatOutput(out: GenerateOutput, tokenizer: ChatTokenizer): string[] {
  if (out.mode === 'generate') return [tokenizer.decode(out.ids, true)];
  const lines = out.ids.map((id, i) => `${(out.logprobs[i] as number).toFixed(6)}\t${id}\t${JSON.stringify(tokenizer.decode([id]))}`);
  return [...lines, `${out.logprobs.reduce((a, b) => a + b, 0).toFixed(6)}\ttotal (${out.ids.length} tokens)`];
}

/**
 * Stderr lines on what ran: the model, the settings, and how generation ended; for the tiny preset, that its
 * weights are random (its text is noise, which a new user would otherwise take for a broken install).
 */
export function describeRun(out: GenerateOutput): string {
  const tiny = out.model.startsWith(`${TINY_PRESET} (`)
    ? `\n${TINY_PRESET} is a preset with random weights, so its text is noise; for a trained model: --run <runId> or --model <HF folder>`
    : '';
  return describeOutput(out) + tiny;
}

/** The first line: the model, the settings, and how generation ended. */
function describeOutput(out: GenerateOutput): string {
  if (out.mode === 'score') return `${out.model}: scored ${out.ids.length} tokens after a ${out.prompt_ids.length}-token prompt`;
  const a = out.generating_args as GeneratingArgs;
  const how =
    a.do_sample && a.temperature > 0
      ? `sampled (temperature ${a.temperature}, top_p ${a.top_p}, top_k ${a.top_k}, seed ${out.seed})`
      : 'greedy';
  return `${out.model}: ${how}, ${out.ids.length} tokens after a ${out.prompt_ids.length}-token prompt, ${out.stopped ? 'ended on a stop token' : `max_new_tokens ${a.max_new_tokens} reached`}`;
}
