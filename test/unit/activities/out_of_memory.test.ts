/**
 * The failure an activity attempt reports when its backend runs out of memory: it names the role, the shape and
 * the memory and what to change, and is retried only once, from a process that had run other activities; the
 * interceptor tells the worker process its backend is lost, and passes other errors and results unchanged.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backendMemoryGuard, outOfMemoryFailure } from '../../../src/activities/out_of_memory';
import { OUT_OF_MEMORY_ERROR, type OutOfMemoryDetails, TASK_QUEUES } from '../../../src/contract';
import { BackendOutOfMemoryError } from '../../../src/model/out_of_memory';
import { WASM_HEAP_BYTES } from '../../../src/model/wasm_memory';

const shape = { kind: 'micro-batch', rows: 128, tokens: 768 } as const;

const oom = () =>
  new BackendOutOfMemoryError({
    backend: 'wasm',
    requestBytes: 1.5 * 1024 ** 3,
    heldBytes: 3 * 1024 ** 3,
    capacityBytes: WASM_HEAP_BYTES,
    reason: 'malloc failed',
    shape,
  });

test('the failure of an attempt names the role, the shape, the memory and what to change; retried only once, from a process that ran other activities', () => {
  const update = { taskQueue: TASK_QUEUES.update, activityType: 'update', attempt: 1 };
  const failure = outOfMemoryFailure(oom(), update, false);
  assert.ok(failure);
  assert.equal(failure.type, OUT_OF_MEMORY_ERROR);
  assert.match(
    failure.message,
    /^update: out of wasm memory in a micro-batch of 128 x 768 tokens \(rows x tokens\): it needed at least 4\.50 GiB \(3\.00 GiB held by tensors \+ an allocation of 1\.50 GiB\); the wasm backend holds at most 4\.00 GiB\. Lower actor_train\.training_args\.per_device_train_batch_size .* --backend tensorflow\)\. Retried once on a fresh worker process\.$/,
  );
  assert.equal(failure.nonRetryable, false);
  const details = failure.details?.[0] as OutOfMemoryDetails;
  assert.deepEqual(
    { role: details.role, activity: details.activity, shape: details.shape, requestBytes: details.requestBytes },
    { role: 'update', activity: 'update', shape, requestBytes: 1.5 * 1024 ** 3 },
  );
  // The first activity of a fresh process, or a retry: the same input fails the same way.
  assert.equal(outOfMemoryFailure(oom(), update, true)?.nonRetryable, true);
  assert.equal(outOfMemoryFailure(oom(), { ...update, attempt: 2 }, false)?.nonRetryable, true);
  assert.match(
    outOfMemoryFailure(oom(), { ...update, attempt: 2 }, false)?.message ?? '',
    /Not retried: the same input fails the same way/,
  );
  // The warm-up runs on the update worker; rollouts name their generation batch and what bounds it.
  assert.match(
    outOfMemoryFailure(oom(), { ...update, activityType: 'prepareRun' }, true)?.message ?? '',
    /^update \(prepareRun\): out of wasm memory/,
  );
  const rolloutOom = new BackendOutOfMemoryError({ ...oom().details, shape: { kind: 'generation batch', rows: 64, tokens: 424 } });
  assert.match(
    outOfMemoryFailure(rolloutOom, { taskQueue: TASK_QUEUES.rollout, activityType: 'rollout', attempt: 1 }, true)?.message ?? '',
    /^rollout: out of wasm memory in a generation batch of 64 x 424 tokens .* Lower max_env_num_per_worker/,
  );
  assert.equal(outOfMemoryFailure(new Error('not memory'), update, true), null);
});

test('the activity interceptor reports the failure, tells the process its backend is lost, and passes other errors and results', async () => {
  let lost = 0;
  const factory = backendMemoryGuard(() => {
    lost++;
  });
  const info = { taskQueue: TASK_QUEUES.update, activityType: 'update', attempt: 1 };
  const execute = (f: () => Promise<unknown>) => factory({ info } as never).inbound!.execute!({ args: [], headers: {} }, f as never);
  assert.equal(await execute(async () => 'done'), 'done');
  await assert.rejects(
    execute(async () => {
      throw new Error('not memory');
    }),
    /not memory/,
  );
  assert.equal(lost, 0);
  await assert.rejects(
    execute(async () => {
      throw oom();
    }),
    (e: unknown) =>
      e instanceof Error &&
      e.name === 'ApplicationFailure' &&
      /^update: out of wasm memory/.test(e.message) &&
      !(e as unknown as { nonRetryable: boolean }).nonRetryable,
  );
  assert.equal(lost, 1, 'a process that ran other activities: retried once, and the process restarts');
});
