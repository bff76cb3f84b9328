/**
 * The beta of the reward-side KL penalty (SPEC.md §2 init_kl_coef, target_kl, kl_horizon; §5.2): fixed, or adaptive
 * when target_kl is set. ROLL roll/utils/kl_controller.py (from TRL's AdaptiveKLController / FixedKLController, after
 * Ziegler et al. 2019, "Fine-Tuning Language Models from Human Preferences", eq. 2). The whole state is beta, so it
 * round-trips through trainer_state.json.
 */

/** A KL coefficient controller. */
export interface KlController {
  /** Current beta (>= 0). */
  readonly value: number;
  /** True when beta follows target_kl. */
  readonly adaptive: boolean;
  /**
   * Feeds the batch KL (critic/kl, nats per token) measured with the current beta; adaptive controllers move beta.
   * @param currentKl finite; @param nSteps trajectories in the batch (> 0)
   * @throws RangeError on a non-finite currentKl or nSteps <= 0.
   */
  update(currentKl: number, nSteps: number): void;
}

/** The SPEC.md §2 keys the controller reads. */
export interface KlControllerConfig {
  init_kl_coef: number;
  target_kl?: number | null;
  /** Default 10000. */
  kl_horizon?: number;
}

/**
 * Builds the controller of a run (ROLL get_kl_controller: adaptive when target_kl is set, else fixed).
 * Adaptive update: e = clip(currentKl / target_kl - 1, -0.2, 0.2); beta *= 1 + e * nSteps / kl_horizon.
 * Fixed: beta = init_kl_coef forever (update checks its input and changes nothing).
 * @param cfg init_kl_coef >= 0, target_kl > 0 or null, kl_horizon > 0
 * @param savedBeta beta from trainer_state.json on resume; adaptive controllers continue from it (a fixed one keeps
 *   init_kl_coef, so a changed config takes effect)
 * @throws RangeError naming the key for a negative or non-finite init_kl_coef, a target_kl or kl_horizon that is
 *   not > 0, or a saved beta that is negative or non-finite.
 */
export function klControllerFromConfig(cfg: KlControllerConfig, savedBeta?: number | null): KlController {
  const horizon = cfg.kl_horizon ?? 10000;
  const target = cfg.target_kl ?? null;
  const beta0 = savedBeta ?? cfg.init_kl_coef;
  for (const [name, v, ok, allowed] of [
    ['init_kl_coef', cfg.init_kl_coef, cfg.init_kl_coef >= 0, '>= 0'],
    ['target_kl', target, target === null || target > 0, '> 0 or null'],
    ['kl_horizon', horizon, horizon > 0, '> 0'],
    ['the saved beta', beta0, beta0 >= 0, '>= 0'],
  ] as const) {
    if (!ok || (v !== null && !Number.isFinite(v))) {
      throw new RangeError(`klControllerFromConfig: ${name} = ${v} is invalid; allowed: a finite number ${allowed}`);
    }
  }
  let value = target === null ? cfg.init_kl_coef : beta0;
  return {
    get value() { return value; },
    adaptive: target !== null,
    update(currentKl: number, nSteps: number): void {
      if (!Number.isFinite(currentKl)) throw new RangeError(`KlController.update: currentKl = ${currentKl}; allowed: a finite number`);
      if (!(nSteps > 0)) throw new RangeError(`KlController.update: nSteps = ${nSteps}; allowed: > 0`);
      if (target === null) return;
      const e = Math.min(0.2, Math.max(-0.2, currentKl / target - 1));
      value *= 1 + (e * nSteps) / horizon;
    },
  };
}
