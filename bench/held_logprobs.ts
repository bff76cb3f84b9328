/**
 * starpo's log-probs of stored trajectories under a run's checkpoint, as the cases test/fixtures/hf/check_peft.py
 * (or check_export.py's transformers load) compares with: a JSON list of {ids, logprobs}, every token after the
 * first. With a LoRA run's export this is the check that PEFT computes what starpo trained:
 *
 *   node --import tsx bench/held_logprobs.ts <runId> <checkpoint step> <rollout step> cases.json [--count 4]
 *   npx starpo export <runId> --step <checkpoint step> --to DIR && npx starpo export <runId> --step <checkpoint step> --merge --to MERGED
 *   ~/.cache/starpo/hf-venv/bin/python test/fixtures/hf/check_peft.py DIR/base DIR cases.json --merged MERGED
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { resolveEndpoints } from '../infra/lifecycle';
import type { Trajectory } from '../src/contract';
import { initBackend } from '../src/model/backend';
import { defaultBackend, hostBackends } from '../src/model/backend_choice';
import { tokenLogProbs } from '../src/model/logprobs';
import { checkpointPrefix, MANIFEST_NAME, rolloutKey } from '../src/storage/keys';
import { ObjectStore } from '../src/storage/object_store';
import { disposeCheckpoint, loadCheckpoint } from '../src/storage/policy_checkpoint';

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { count: { type: 'string', default: '4' } } });
  const [runId, step, rolloutStep, out] = positionals;
  if (!runId || !step || !rolloutStep || !out)
    throw new Error('usage: held_logprobs.ts <runId> <checkpoint step> <rollout step> <cases.json> [--count n]');
  await initBackend(defaultBackend('update', hostBackends()));
  const store = new ObjectStore((await resolveEndpoints({ start: false })).s3);
  const c = await loadCheckpoint(store, await store.refOf(`${checkpointPrefix(runId, Number(step))}${MANIFEST_NAME}`));
  try {
    const shard = await store.getJsonlGz<Trajectory>(rolloutKey(runId, Number(rolloutStep), 'train', 0));
    const cases = shard.slice(0, Number(values.count)).map(({ inputIds: ids }) => {
      const logp = tf.tidy(
        () => tokenLogProbs(c.model, tf.tensor2d([ids], [1, ids.length], 'int32'), tf.ones([1, ids.length]) as tf.Tensor2D).logp,
      );
      const logprobs = Array.from(logp.dataSync());
      logp.dispose();
      return { ids, logprobs };
    });
    writeFileSync(out, JSON.stringify(cases));
    console.log(
      `${out}: ${cases.length} trajectories of step ${rolloutStep} (${cases.map((x) => x.ids.length).join(', ')} tokens) under checkpoint step ${step}`,
    );
  } finally {
    disposeCheckpoint(c);
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
