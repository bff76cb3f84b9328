/**
 * A worker whose backend runs out of memory (wasm heap, a TensorFlow allocation). The attempt fails with a
 * BackendOutOfMemoryError failure whose message names the role, the micro-batch or generation batch (rows x
 * tokens), the bytes it needed and what the backend holds, and what to change; then the process stops taking
 * tasks and exits with BACKEND_LOST_EXIT_CODE so its supervisor (cli/spawn_workers.ts under `starpo train`)
 * starts it again with a clean backend. Exiting rather than re-initialising the backend in place: an abort leaves
 * the wasm module unusable, the wasm heap never shrinks, tensors of the failed computation can outlive tfjs's
 * scopes, and a native build cannot be reloaded in its process; a new process costs one checkpoint load.
 *
 * Retries: an attempt's input fixes its shapes, so a fresh process fails it the same way. The failure is not
 * retried when the attempt was its process's first activity or was itself a retry; an attempt on a process that
 * had run other activities (its heap may be fragmented) is retried once, on a fresh process.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { OUT_OF_MEMORY_ERROR, type OutOfMemoryDetails } from '../contract/errors';
import { TASK_QUEUES } from '../contract/workflow';
import { type BackendOutOfMemoryError, outOfMemoryOf } from '../model/out_of_memory';

/** The exit code of a worker process whose backend ran out of memory (EX_TEMPFAIL): start it again. */
export const BACKEND_LOST_EXIT_CODE = 75;

/** What the attempt was: its task queue, activity type and attempt number (Temporal's activity info). */
export interface AttemptInfo {
  taskQueue: string;
  activityType: string;
  attempt: number;
}

/** What to change, by what ran out. */
function advice(oom: BackendOutOfMemoryError): string {
  const { shape, backend } = oom.details;
  const elsewhere =
    backend === 'wasm'
      ? 'or run this role on the native backend (`starpo backend install`, then --backend tensorflow)'
      : 'or use a host with more memory';
  if (shape?.kind === 'generation batch')
    return `Lower max_env_num_per_worker of the env manager (fewer episodes generate at once) or sequence_length, ${elsewhere}.`;
  if (shape?.kind === 'micro-batch')
    return (
      'Lower actor_train.training_args.per_device_train_batch_size and raise gradient_accumulation_steps by the same factor ' +
      '(the optimizer step stays the same), turn gradient checkpointing on (actor_train.model_args.disable_gradient_checkpointing=false) ' +
      `or lower sequence_length, ${elsewhere}.`
    );
  return `Use a smaller model, ${elsewhere}.`;
}

/**
 * The failure an activity attempt reports for `err` when it is its backend running out of memory, else null.
 * @param fresh whether the attempt was the first activity of its worker process
 */
export function outOfMemoryFailure(err: unknown, info: AttemptInfo, fresh: boolean): ApplicationFailure | null {
  const oom = outOfMemoryOf(err);
  if (!oom) return null;
  const role = info.taskQueue === TASK_QUEUES.rollout ? 'rollout' : info.taskQueue === TASK_QUEUES.update ? 'update' : info.taskQueue;
  const nonRetryable = fresh || info.attempt > 1;
  const retry = nonRetryable
    ? 'Not retried: the same input fails the same way on a fresh worker.'
    : 'Retried once on a fresh worker process.';
  const details: OutOfMemoryDetails = { ...oom.details, role, activity: info.activityType };
  return ApplicationFailure.create({
    type: OUT_OF_MEMORY_ERROR,
    message: `${role}${info.activityType === role ? '' : ` (${info.activityType})`}: ${oom.message}. ${advice(oom)} ${retry}`,
    nonRetryable,
    details: [details],
    cause: oom,
  });
}

/**
 * The activity interceptor that turns a backend running out of memory into its failure (outOfMemoryFailure) and
 * then calls `onBackendLost` (the worker process shuts down and exits with BACKEND_LOST_EXIT_CODE).
 */
export function backendMemoryGuard(onBackendLost: () => void): ActivityInterceptorsFactory {
  let started = 0;
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const fresh = started++ === 0;
        try {
          return await next(input);
        } catch (err) {
          const failure = outOfMemoryFailure(err, ctx.info, fresh);
          if (!failure) throw err;
          onBackendLost();
          throw failure;
        }
      },
    },
  });
}
