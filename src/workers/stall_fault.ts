/**
 * Fault injection for the watchdog's tests (a TESTING TOOL, like the chaos env): with the environment variable
 * STARPO_TEST_STALL = "<activity type>:<marker file>", the first heartbeat of an activity of that type, in any
 * worker process, creates the marker file and then spins the JS thread forever (a synchronous hang, where no
 * timer of the thread fires). Later attempts find the marker and run normally, so the retried attempt succeeds.
 */
import { closeSync, openSync } from 'node:fs';

/** The environment variable that arms the fault. */
export const STALL_ENV = 'STARPO_TEST_STALL';

/**
 * Hangs forever when STALL_ENV names `activityType` and its marker file does not exist yet (creating it first,
 * exclusively, so only one attempt ever hangs). Returns at once otherwise.
 */
export function stallOnceIfArmed(activityType: string): void {
  const spec = process.env[STALL_ENV];
  if (!spec) return;
  const colon = spec.indexOf(':');
  if (spec.slice(0, colon) !== activityType) return;
  try {
    closeSync(openSync(spec.slice(colon + 1), 'wx'));
  } catch {
    return; // the marker exists: this attempt runs normally
  }
  for (;;) {
    // spin: the watchdog thread must end the process
  }
}
