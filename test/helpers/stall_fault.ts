/**
 * Fault injection for the watchdog's tests: with STARPO_TEST_STALL = "<activity type>:<marker file>", the
 * first heartbeat of an activity of that type, in any worker process loading this file, creates the marker
 * file and then spins the JS thread forever (a synchronous hang, where no timer of the thread fires). Later
 * attempts find the marker and run normally, so the retried attempt succeeds.
 */
import { closeSync, openSync } from 'node:fs';
import { Context } from '@temporalio/activity';

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

/**
 * Makes every activity heartbeat of this process pass through stallOnceIfArmed first, by wrapping the
 * heartbeat of each activity Context the activities look up (production code is not changed).
 */
export function armStallOnHeartbeat(): void {
  const current = Context.current.bind(Context);
  const wrapped = new WeakSet<Context>();
  Context.current = () => {
    const context = current();
    if (!wrapped.has(context)) {
      const send = context.heartbeat;
      (context as { heartbeat: Context['heartbeat'] }).heartbeat = (details?: unknown) => {
        stallOnceIfArmed(context.info.activityType);
        send(details);
      };
      wrapped.add(context);
    }
    return context;
  };
}
