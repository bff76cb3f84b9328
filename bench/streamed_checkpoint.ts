/**
 * Peak RSS of writing and reading one big safetensors object through the store (an optimizer state's worth of F32
 * tensors, default 2 GiB), against the payload: `--mode streamed` (ObjectStore.putStreamed of safetensorsStreamOf,
 * readInto a SafetensorsDecoder: how checkpoints move) or `--mode whole` (encodeSafetensors + put, get +
 * decodeSafetensors: how they moved before). Starts its own S3 server (test/helpers/servers.ts). Each phase's peak
 * is its own (clear_refs); the payload is freed before the read. Prints one JSON line.
 *
 *   node --expose-gc --import tsx bench/streamed_checkpoint.ts [--gib 2] [--mode streamed|whole]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { PhasePeakRss } from '../src/algo/throughput';
import {
  decodeSafetensors,
  encodeSafetensors,
  type SafeTensor,
  SafetensorsDecoder,
  safetensorsStreamOf,
} from '../src/model/hf/safetensors';
import { ObjectStore } from '../src/storage/object_store';
import { startTestServers } from '../test/helpers/servers';

const { values: o } = parseArgs({ options: { gib: { type: 'string', default: '2' }, mode: { type: 'string', default: 'streamed' } } });
if (o.mode !== 'streamed' && o.mode !== 'whole') throw new Error(`--mode ${o.mode}; allowed: streamed, whole`);
const GIB = 2 ** 30;
const gib = (bytes: number) => Math.round((bytes / GIB) * 1000) / 1000;
const gc = () => (globalThis as { gc?: () => void }).gc?.();

/** F32 tensors of 128 MiB each (the last smaller) holding `bytes` in all, filled with a cheap xorshift. */
function payload(bytes: number): Record<string, SafeTensor> {
  const tensors: Record<string, SafeTensor> = {};
  let x = 2463534242;
  for (let at = 0, i = 0; at < bytes; i++) {
    const n = Math.min(32 * 2 ** 20, Math.floor((bytes - at) / 4));
    const words = new Uint32Array(n);
    for (let j = 0; j < n; j++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      words[j] = x >>> 0;
    }
    tensors[`m.layer${String(i).padStart(3, '0')}`] = { dtype: 'F32', shape: [n], data: new Float32Array(words.buffer) };
    at += n * 4;
    if (n === 0) break;
  }
  return tensors;
}

(async () => {
  const servers = await startTestServers();
  try {
    const store = new ObjectStore(servers.endpoints.s3);
    await store.ensureBucket();
    const peaks = new PhasePeakRss();
    let tensors: Record<string, SafeTensor> | null = await peaks.measure('payload', () => payload(Math.round(Number(o.gib) * GIB)));
    gc();
    const resident = process.memoryUsage().rss;
    const key = 'bench/optimizer.safetensors';
    let t = performance.now();
    const ref = await peaks.measure('write', async () =>
      o.mode === 'streamed' ? store.putStreamed(key, safetensorsStreamOf(tensors!)) : store.put(key, encodeSafetensors(tensors!)),
    );
    const writeSeconds = (performance.now() - t) / 1000;
    tensors = null;
    gc();
    const baseline = process.memoryUsage().rss;
    t = performance.now();
    const read = await peaks.measure('read', async () => {
      if (o.mode === 'whole') return decodeSafetensors(await store.get(ref));
      let decoder = new SafetensorsDecoder(ref.bytes);
      await store.readInto(ref, () => {
        decoder = new SafetensorsDecoder(ref.bytes);
        return decoder;
      });
      return decoder.finish();
    });
    const readSeconds = (performance.now() - t) / 1000;
    console.log(
      JSON.stringify({
        mode: o.mode,
        objectGiB: gib(ref.bytes),
        tensors: Object.keys(read.tensors).length,
        rssWithPayloadGiB: gib(resident),
        writePeakGiB: gib(peaks.phases.write ?? 0),
        writeOverPayloadGiB: gib((peaks.phases.write ?? 0) - resident),
        writeSeconds,
        rssBeforeReadGiB: gib(baseline),
        readPeakGiB: gib(peaks.phases.read ?? 0),
        readOverBaselineGiB: gib((peaks.phases.read ?? 0) - baseline),
        readSeconds,
        peaksPerPhase: peaks.resets,
        load: loadavg()[0],
      }),
    );
  } finally {
    await servers.stop();
  }
})();
