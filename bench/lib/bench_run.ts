/**
 * What the benches that train through Temporal share: their own namespace on the local dev server and
 * reading a finished run's per-step metrics from the object store.
 */
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { endpointsToEnv } from '../../infra/env';
import { resolveEndpoints } from '../../infra/lifecycle';
import { SEARCH_ATTRIBUTES } from '../../infra/search_attributes';
import type { InfraEndpoints } from '../../infra/types';
import { metricsKey } from '../../src/storage/keys';
import type { ObjectStore } from '../../src/storage/object_store';

/** Per-step metrics of a finished run (runs/<run>/metrics/step-N.json, N = 0..steps-1) and its final validation. */
export async function stepMetrics(store: ObjectStore, runId: string, steps: number): Promise<Array<Record<string, number>>> {
  const out: Array<Record<string, number>> = [];
  for (let step = 0; step <= steps; step++) {
    const key = metricsKey(runId, step);
    out.push((await store.exists(key)) ? ((await store.getJson(key)) as { metrics: Record<string, number> }).metrics : {});
  }
  return out;
}

/** The benches' Temporal namespace: workers of other runs (which poll the same task queues in `default`) cannot take their activities. */
export const BENCH_NAMESPACE = 'starpo-bench';

/** Registers `namespace` with starpo's search attributes on the server when missing and waits until it serves. */
export async function ensureNamespace(e: InfraEndpoints, namespace: string): Promise<void> {
  const conn = await Connection.connect({ address: e.temporalAddress });
  try {
    const exists = await conn.workflowService.describeNamespace({ namespace }).then(
      () => true,
      () => false,
    );
    if (!exists) await conn.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    const types = temporal.api.enums.v1.IndexedValueType;
    const typeOf = {
      Keyword: types.INDEXED_VALUE_TYPE_KEYWORD,
      Int: types.INDEXED_VALUE_TYPE_INT,
      Double: types.INDEXED_VALUE_TYPE_DOUBLE,
      Text: types.INDEXED_VALUE_TYPE_TEXT,
      Bool: types.INDEXED_VALUE_TYPE_BOOL,
      Datetime: types.INDEXED_VALUE_TYPE_DATETIME,
    };
    for (;;) {
      const listed = await conn.operatorService.listSearchAttributes({ namespace }).catch(() => null);
      const missing = Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !(name in (listed?.customAttributes ?? {})));
      if (listed && missing.length === 0) return;
      if (listed)
        await conn.operatorService.addSearchAttributes({
          namespace,
          searchAttributes: Object.fromEntries(missing.map(([n, t]) => [n, typeOf[t]])),
        });
      await new Promise((r) => setTimeout(r, 1000)); // a new namespace reaches the server's cache within seconds
    }
  } finally {
    await conn.close();
  }
}

/**
 * Starts the local servers when needed, registers BENCH_NAMESPACE and points this process's environment
 * (which `train()` and the workers it spawns read) at it. Returns the endpoints.
 */
export async function useBenchNamespace(log: (line: string) => void): Promise<InfraEndpoints> {
  const local = await resolveEndpoints({ start: true, log });
  await ensureNamespace(local, BENCH_NAMESPACE);
  const bench = { ...local, temporalNamespace: BENCH_NAMESPACE };
  Object.assign(process.env, endpointsToEnv(bench));
  return bench;
}
