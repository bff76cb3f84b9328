/** The `starpo` command as a child process against given servers, for integration tests. */
import { execFile } from 'node:child_process';
import { endpointsToEnv } from '../../infra/env';
import type { InfraEndpoints } from '../../infra/types';
import { STARPO_BIN } from '../../src/cli/spawn_workers';

/** Runs `starpo <args>` with the servers' endpoints in its environment; never rejects. */
export function starpoCli(endpoints: InfraEndpoints, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [STARPO_BIN, ...args], { env: { ...process.env, ...endpointsToEnv(endpoints) } }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}
