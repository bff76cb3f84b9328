/**
 * Waiting for a started server to become healthy, with a deadline and the log tail on failure
 * (DESIGN.md, "Infra on a developer or CI machine").
 */
import { InfraStartError } from './errors';
import { isAlive, logTail } from './process';
import type { ProcessRecord } from './types';

/**
 * Polls `probe` (null = healthy, else a reason) every 300 ms until healthy.
 * @param deadlineSeconds seconds before giving up.
 * @throws InfraStartError when the process exits or the deadline passes; the message names the server,
 *   the last reason and the tail of its log file.
 */
export async function waitHealthy(
  what: string,
  rec: ProcessRecord,
  probe: () => Promise<string | null>,
  deadlineSeconds = 60,
): Promise<void> {
  const deadline = Date.now() + deadlineSeconds * 1000;
  let reason = 'not probed yet';
  for (;;) {
    reason = (await probe()) ?? '';
    if (reason === '') return;
    if (!isAlive(rec)) {
      throw new InfraStartError(`${what} (pid ${rec.pid}) exited before it became healthy (${reason}).\nLast lines of ${rec.logFile}:\n${logTail(rec.logFile)}`);
    }
    if (Date.now() > deadline) {
      throw new InfraStartError(`${what} (pid ${rec.pid}) not healthy after ${deadlineSeconds} s: ${reason}\nLast lines of ${rec.logFile}:\n${logTail(rec.logFile)}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}
