/**
 * A fixed workload whose numbers must not move when the model or update code is made faster: a seeded tiny
 * Qwen2 (weights scaled up so its distributions are peaked and a changed logit can change a sampled token)
 * generates two turns of sampled tokens through a KV session, scores 16 trajectories, takes one ppoUpdate of the
 * quickstart config, and scores them again. test/fixtures/same_numbers/write.ts stores what it gives per backend;
 * test/unit/model/same_numbers.test.ts recomputes it and compares.
 */
import * as tf from '@tensorflow/tfjs';
import { atLength, batchOverrides, randomTrajectories, timeUpdate } from '../../src/algo/throughput';
import type { Trajectory } from '../../src/contract';
import { tinyPreset } from '../../src/model/config';
import { generate } from '../../src/model/generate';
import { KvSession } from '../../src/model/kv_session';
import { tokenLogProbs } from '../../src/model/logprobs';
import { Qwen2 } from '../../src/model/qwen2';
import { loadConfigFile } from '../../src/preflight/load';
import { Rng } from '../../src/util/rng';

/** What the workload gives: sampled tokens and their log-probs per turn, trajectory log-probs before and after one update. */
export interface SameNumbers {
  turns: Array<{ tokens: number[][]; logprobs: number[][] }>;
  logprobsBefore: number[][];
  gradNorm: number;
  logprobsAfter: number[][];
}

const VOCAB = 101;
const LENGTH = 48;
const BATCH = 16;

function scaledModel(): Qwen2 {
  const base = Qwen2.random(tinyPreset(VOCAB), 7);
  const scaled = new Map<string, tf.Tensor>();
  for (const [name, w] of base.toNamedTensors()) scaled.set(name, name.endsWith('norm.weight') ? w.clone() : tf.mul(w, 10));
  const model = Qwen2.fromNamedTensors(tinyPreset(VOCAB), scaled);
  for (const t of scaled.values()) t.dispose();
  base.dispose();
  return model;
}

function scores(model: Qwen2, trajectories: Trajectory[]): number[][] {
  return tf.tidy(() => {
    const ids = tf.tensor2d(
      trajectories.map((t) => t.inputIds),
      [BATCH, LENGTH],
      'int32',
    );
    const { logp } = tokenLogProbs(model, ids, tf.onesLike(ids).toFloat() as tf.Tensor2D);
    return logp.arraySync() as number[][];
  });
}

/** Runs the workload on the active backend. @param quickstart path of configs/frozen_lake_solver.yaml */
export async function sameNumbers(quickstart: string): Promise<SameNumbers> {
  const model = scaledModel();
  try {
    const trajectories = randomTrajectories({ count: BATCH, length: LENGTH, vocab: VOCAB, groupSize: 4, seed: 3 });
    const session = new KvSession();
    const rowIds = [0, 1, 2, 3, 4, 5];
    let contexts = rowIds.map((i) => trajectories[i].inputIds.slice(0, 8 + 5 * i));
    const turns: SameNumbers['turns'] = [];
    for (const turn of [0, 1]) {
      const out = generate(model, contexts, {
        maxNewTokens: 10,
        temperature: 1,
        topP: 0.95,
        topK: 50,
        stopIds: [],
        rngs: rowIds.map((i) => new Rng(11, turn, i)),
        session,
        rowIds,
      });
      turns.push(out);
      contexts = contexts.map((c, i) => [...c, ...out.tokens[i], 3 + i, 4 + i]);
    }
    session.clear();
    const logprobsBefore = scores(model, trajectories);
    const config = atLength(loadConfigFile(quickstart, batchOverrides({ batch: BATCH, microBatch: 8 })).config, LENGTH);
    const { metrics } = await timeUpdate({ model, config, trajectories, padId: 0 });
    return { turns, logprobsBefore, gradNorm: metrics['actor/grad_norm'], logprobsAfter: scores(model, trajectories) };
  } finally {
    model.dispose();
  }
}
