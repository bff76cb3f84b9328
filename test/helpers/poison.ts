/**
 * A poisoned run for the many-runs test and bench: config overrides that play every train and validation
 * episode on a `chaos` copy of the config's FrozenLake tag that throws in every reset, so every episode of
 * the run fails, the warm-up's demonstrations included.
 */
import { runInputFromFile } from '../../src/cli/run_input';

/** Overrides of `file` (a config with a FrozenLake tag) that poison every episode of the run under tag `tag`. */
export function poisonOverrides(file: string, tag = 'Poison'): string[] {
  const lake = runInputFromFile(file, 'poison-plan').input.config.custom_envs.FrozenLake;
  if (!lake) throw new Error(`${file} has no custom_envs.FrozenLake to poison`);
  const entry = {
    ...lake,
    env_type: 'chaos',
    env_config: { inner_env_type: lake.env_type, inner_env_config: lake.env_config, throw_on_reset: true },
  };
  return [`+custom_envs.${tag}=${JSON.stringify(entry)}`, `train_env_manager.tags=[${tag}]`, `val_env_manager.tags=[${tag}]`];
}
