/** ROLL keys starpo accepts and does not use (config/schema_walk.ts reports them once, by this schema's identity). */
import { z } from 'zod';

/** The schema of every ROLL key starpo accepts and does not use: any value, reported as ignored. */
export const IGNORED = z.unknown().optional();

/** A zod shape accepting each of `keys` as IGNORED. */
export function ignoredShape<const K extends readonly string[]>(keys: K): { [P in K[number]]: typeof IGNORED } {
  return Object.fromEntries(keys.map((k) => [k, IGNORED])) as { [P in K[number]]: typeof IGNORED };
}
