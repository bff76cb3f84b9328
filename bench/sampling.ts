/**
 * Host-side token sampling at Qwen2.5's vocabulary (151,936): milliseconds per sampled token of sampleToken
 * (partial selection) and of the sort-based sampler it replaced (test/helpers/reference_sampler.ts), on a
 * flat row (an untrained model) and a peaked one (a trained policy), for the settings rollouts use. Checks
 * that both pick the same tokens. No assertions on time; the load average is printed beside the figures.
 *
 *   node --import tsx bench/sampling.ts [--draws 20]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type SamplingOptions, sampleToken } from '../src/model/sampling';
import { Rng } from '../src/util/rng';
import { referenceSample } from '../test/helpers/reference_sampler';

const V = 151_936;

/** Milliseconds per call of `pick` over `draws` draws, and the tokens picked. */
function time(draws: number, pick: (d: number) => number): { ms: number; tokens: number[] } {
  const tokens: number[] = [];
  const t = performance.now();
  for (let d = 0; d < draws; d++) tokens.push(pick(d));
  return { ms: (performance.now() - t) / draws, tokens };
}

function main(): void {
  const { values } = parseArgs({ options: { draws: { type: 'string', default: '20' } } });
  const draws = Number(values.draws);
  if (!Number.isInteger(draws) || draws < 1) throw new Error(`--draws ${values.draws}: allowed: an integer >= 1`);
  const gen = new Rng(1, 'bench-sampling');
  const rows: Array<[string, Float32Array]> = [
    ['flat (spread 0.05)', Float32Array.from({ length: V }, () => 0.05 * gen.normal())],
    ['peaked (spread 6)', Float32Array.from({ length: V }, () => 6 * gen.normal())],
  ];
  const settings: Array<[string, SamplingOptions]> = [
    ['temperature 1', {}],
    ['top_p 0.9', { topP: 0.9 }],
    ['top_k 50, top_p 0.95, T 0.8', { topK: 50, topP: 0.95, temperature: 0.8 }],
  ];
  const load = [loadavg()[0]];
  console.log(`vocabulary ${V}, ${draws} draws per cell, ms per sampled token`);
  console.log(`${'row'.padEnd(20)} ${'setting'.padEnd(30)} ${'sort'.padStart(8)} ${'partial'.padStart(8)} speed-up  same tokens`);
  for (const [rowName, logits] of rows) {
    for (const [name, opts] of settings) {
      const before = time(draws, (d) => referenceSample(logits, opts, new Rng(d)));
      const after = time(draws, (d) => sampleToken(logits, 0, V, opts, new Rng(d)).token);
      const same = before.tokens.every((t, i) => t === after.tokens[i]);
      console.log(
        `${rowName.padEnd(20)} ${name.padEnd(30)} ${before.ms.toFixed(2).padStart(8)} ${after.ms.toFixed(2).padStart(8)} ${(before.ms / after.ms).toFixed(1).padStart(7)}x  ${same ? 'yes' : 'NO'}`,
      );
      if (!same) process.exitCode = 1;
    }
  }
  load.push(loadavg()[0]);
  console.log(`load average (1 min) ${load.map((l) => l.toFixed(2)).join(' -> ')}`);
}

main();
