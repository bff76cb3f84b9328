/** Errors for bad run input (config files, CLI arguments). The CLI maps them to exit code 2. */
import { CONFIG_ERROR } from '../contract/errors';

/**
 * A config that cannot run. `problems` holds one line per bad key, each naming the key, the value
 * and what is allowed. The Temporal workers treat it as non-retryable (type name `ConfigError`).
 */
export class ConfigError extends Error {
  readonly problems: string[];

  constructor(source: string, problems: string[]) {
    super(`${source}: invalid config\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = CONFIG_ERROR;
    this.problems = problems;
  }
}
