/**
 * The KL between the policy and the frozen reference policy (docs/numerics.md §5.2, §6): the per-token estimators
 * of kl_penalty (ROLL roll/utils/functionals.py compute_approx_kl; J. Schulman, "Approximating KL Divergence", 2020,
 * for k1/k3), tensor functions on float32 log-probs (nats) to call inside tf.tidy / tf.variableGrads, and the
 * controller of beta, the reward-side KL coefficient.
 */
import * as tf from '@tensorflow/tfjs';
import { KL_PENALTIES, type KlPenalty } from '../contract';
import { sumLastAxis } from '../model/long_sum';

export { KL_PENALTIES, type KlPenalty };

/** k3 is clamped to [-K3_CLAMP, K3_CLAMP] (ROLL compute_approx_kl, and the KL loss of §6). */
export const K3_CLAMP = 10;

/**
 * Per-token KL estimate from the log-probs of the sampled tokens (ROLL compute_approx_kl), with d = logp - refLogp:
 * kl (k1) = d; abs = |d|; mse (k2) = 0.5 d^2; k3 = clamp(exp(-d) + d - 1, -10, 10), i.e.
 * exp(ref - logp) - (ref - logp) - 1. Not masked: the caller multiplies by its response mask.
 * Elementwise, differentiable w.r.t. both inputs (k3 has zero gradient where the clamp is active).
 * @param logp [B, T] float32 log-probs of the sampled tokens under the policy (or old policy)
 * @param refLogp [B, T] float32 log-probs of the same tokens under the reference policy
 * @param kind one of kl, abs, mse, k3
 * @returns [B, T] float32 (nats)
 * @throws Error when the shapes differ (tf.util.assertShapesMatch); RangeError for kind `full` (use klFull)
 *   or an unknown kind.
 */
export function klPenalty(logp: tf.Tensor2D, refLogp: tf.Tensor2D, kind: KlPenalty): tf.Tensor2D {
  tf.util.assertShapesMatch(logp.shape, refLogp.shape, 'klPenalty: logp and refLogp:');
  const d = tf.sub(logp, refLogp) as tf.Tensor2D;
  switch (kind) {
    case 'kl':
      return d;
    case 'abs':
      return tf.abs(d);
    case 'mse':
      return tf.mul(tf.square(d), 0.5);
    case 'k3':
      return tf.clipByValue(tf.sub(tf.add(tf.exp(tf.neg(d)), d), 1), -K3_CLAMP, K3_CLAMP) as tf.Tensor2D;
    case 'full':
      throw new RangeError(
        'klPenalty: kl_penalty "full" needs the whole log-softmax over the vocabulary; call klFull(logpAll, refLogpAll)',
      );
    default:
      throw new RangeError(`klPenalty: kl_penalty "${String(kind)}" is not known; allowed: ${KL_PENALTIES.join(', ')}`);
  }
}

/**
 * Exact KL(pi || ref) per position over the vocabulary (kl_penalty `full`; ROLL compute_approx_kl with
 * F.kl_div(ref, logp, log_target=True).sum(-1)): sum_v exp(logpAll) * (logpAll - refLogpAll).
 * @param logpAll [B, T, V] float32 log-softmax of the policy
 * @param refLogpAll [B, T, V] float32 log-softmax of the reference policy
 * @returns [B, T] float32 (nats), not masked
 * @throws Error when the shapes differ (tf.util.assertShapesMatch).
 */
export function klFull(logpAll: tf.Tensor3D, refLogpAll: tf.Tensor3D): tf.Tensor2D {
  tf.util.assertShapesMatch(logpAll.shape, refLogpAll.shape, 'klFull: logpAll and refLogpAll:');
  return sumLastAxis<tf.Rank.R2>(tf.mul(tf.exp(logpAll), tf.sub(logpAll, refLogpAll)));
}

// The beta of the reward-side KL penalty (init_kl_coef, target_kl, kl_horizon; §5.2): fixed, or adaptive when
// target_kl is set. ROLL roll/utils/kl_controller.py (from TRL's AdaptiveKLController / FixedKLController, after
// Ziegler et al. 2019, "Fine-Tuning Language Models from Human Preferences", eq. 2). The whole state is beta, so it
// round-trips through trainer_state.json.

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

/** The config keys the controller reads. */
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
    get value() {
      return value;
    },
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
