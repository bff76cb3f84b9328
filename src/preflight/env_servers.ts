/**
 * The servers of the envs a run plays (an `openenv` tag's URLs: GET <url>/health), asked before anything
 * starts, as Temporal and S3 are: a server that does not answer refuses `config check` and `train` with
 * exit 3 instead of failing every episode of its tag once the run is under way.
 */
import { InfraUnavailableError } from '../../infra/errors';
import type { RunConfig } from '../contract';
import { checkEnvServers } from '../envs/registry';

/**
 * Asks every env server of the config's train and val tags, all at once.
 * @throws InfraUnavailableError (exit 3) naming each tag, server and reason when one does not answer
 */
export async function refuseUnreachableEnvServers(cfg: RunConfig): Promise<void> {
  const tags = [...new Set([...cfg.train_env_manager.tags, ...cfg.val_env_manager.tags])];
  const problems = await Promise.all(
    tags.map(async (tag) => {
      const env = cfg.custom_envs[tag];
      try {
        await checkEnvServers(env.env_type, env.env_config);
        return null;
      } catch (err) {
        return `custom_envs.${tag} (env_type ${env.env_type}): ${(err as Error).message}`;
      }
    }),
  );
  const bad = problems.filter((p) => p !== null);
  if (bad.length === 0) return;
  throw new InfraUnavailableError(
    `env servers do not answer; start them (or fix custom_envs.<tag>.env_config.url) and try again:\n${bad.map((p) => `  - ${p}`).join('\n')}`,
    { hint: false },
  );
}
