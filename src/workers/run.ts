/**
 * Worker entry points by role (DESIGN.md, Workers and compute): `control` polls the workflow task
 * queue "starpo"; `rollout` runs rollout activities on "starpo-rollout"; `update` runs the update,
 * prepareRun and writeMetrics activities on "starpo-update"; `all` runs the three in one process.
 * CPU-heavy tfjs work blocks Node's event loop, so production keeps roles in separate processes.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import type { InfraEndpoints } from '../../infra/types';
import { createActivities } from '../activities';
import { ObjectStore } from '../storage/object_store';
import { TASK_QUEUES } from '../workflows/api';
import { initBackend } from '../model/backend';
import type { Role } from './roles';


/**
 * Connects to Temporal and the object store and runs the role's workers until SIGINT/SIGTERM.
 * On shutdown Temporal waits up to `shutdownGraceTime` (30 s) for running activities; an activity
 * that does not finish is retried by the server on another worker.
 * @throws Error when Temporal or the object store cannot be reached
 */
export async function runWorkers(role: Role, endpoints: InfraEndpoints, log: (line: string) => void = console.log): Promise<void> {
  const connection = await NativeConnection.connect({ address: endpoints.temporalAddress });
  const namespace = endpoints.temporalNamespace;
  const workers: Worker[] = [];
  const wants = (r: Role) => role === 'all' || role === r;
  const shutdownGraceTime = '30 seconds';
  if (wants('rollout') || wants('update')) {
    const backend = await initBackend();
    log(`tfjs backend: ${backend}`);
    const store = new ObjectStore(endpoints.s3);
    await store.ensureBucket();
    const activities = createActivities(store);
    if (wants('rollout')) {
      workers.push(await Worker.create({
        connection, namespace, taskQueue: TASK_QUEUES.rollout, activities, shutdownGraceTime,
        maxConcurrentActivityTaskExecutions: 1,
      }));
    }
    if (wants('update')) {
      workers.push(await Worker.create({
        connection, namespace, taskQueue: TASK_QUEUES.update, activities, shutdownGraceTime,
        maxConcurrentActivityTaskExecutions: 1,
      }));
    }
  }
  if (wants('control')) {
    workers.push(await Worker.create({
      connection, namespace, taskQueue: TASK_QUEUES.control, workflowsPath: require.resolve('../workflows'),
      shutdownGraceTime,
    }));
  }
  log(`starpo worker (${role}) polling ${workers.map((w) => w.options.taskQueue).join(', ')} on ${endpoints.temporalAddress}`);
  try {
    await Promise.all(workers.map((w) => w.run()));
  } finally {
    await connection.close();
  }
}
