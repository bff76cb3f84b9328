/**
 * Prints the learning curve of a run from its stored metrics (runs/<runId>/metrics/step-N.json):
 * one line per step with train success, mean episode score, in-group score spread, entropy, grad
 * norm, seconds per phase, and the validation success where an evaluation ran.
 *
 *   npx tsx bench/run_curve.ts <runId>        (servers from the environment or `starpo infra up`)
 */
import { resolveEndpoints } from '../infra/lifecycle';
import { metricsKey, runPrefix } from '../src/storage/keys';
import { ObjectStore } from '../src/storage/object_store';

async function main(): Promise<void> {
  const runId = process.argv[2];
  if (!runId) throw new Error('usage: npx tsx bench/run_curve.ts <runId>');
  const store = new ObjectStore((await resolveEndpoints({ start: false })).s3);
  const keys = (await store.list(`${runPrefix(runId)}metrics/`)).map((o) => o.key).sort();
  if (keys.length === 0) throw new Error(`no metrics under ${runPrefix(runId)}metrics/`);
  const f = (x: number | undefined, d = 3) => (x === undefined ? '     -' : x.toFixed(d).padStart(6));
  console.log('step  train_succ  score   adv_max  entropy  grad_norm  t_rollout  t_update  t_step  val_success');
  for (const key of keys) {
    const { step, metrics: m } = (await store.getJson(key)) as { step: number; metrics: Record<string, number> };
    if (key !== metricsKey(runId, step)) continue;
    const val = Object.entries(m)
      .filter(([k]) => k.startsWith('val/env/') && k.endsWith('/success'))
      .map(([k, v]) => `${k.slice(8, -8) || 'all'} ${v.toFixed(3)}`);
    console.log(
      `${String(step).padStart(4)}  ${f(m['env/success'])}     ${f(m['env/score'])}  ${f(m['critic/advantages/max'])}  ${f(m['actor/entropy'])}  ` +
        `${f(m['actor/grad_norm'])}     ${f(m['time/rollout'], 1)}     ${f(m['time/update'], 1)}  ${f(m['time/step'], 1)}  ${val.join(', ')}`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
