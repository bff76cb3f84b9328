/**
 * The learning curves of `starpo report`, as data: which stored metrics (runs/<run>/metrics/step-N.json,
 * ROLL's names, docs/numerics.md, "Metrics") each chart plots, per env tag where the metrics are per tag, plus the
 * collapse_guard floors and the steps where it fired (`collapse/fired`). Pure; svg.ts draws them.
 */
import type { RunConfig, StepMetrics } from '../contract';

/** One line of a chart: (step, value) points in step order. */
export interface Series {
  name: string;
  points: Array<{ step: number; value: number }>;
}

/** One chart: `id` is its stable data-chart attribute in the HTML. */
export interface Chart {
  id: string;
  title: string;
  /** Y axis title (unit). */
  unit: string;
  /** The y axis range: `fixed` (e.g. [0, 1] for rates), `nonNegative` (never below 0), or from the data. */
  y: { fixed: [number, number] } | 'nonNegative' | 'data';
  series: Series[];
  /** A horizontal reference line (a collapse_guard floor), when it applies. */
  floor: { value: number; label: string } | null;
  /** Steps marked with a vertical line (collapse_guard fired). */
  marks: number[];
  /** The x axis title when it is not 'step' (points' `step` then holds that quantity, e.g. wall minutes). */
  xTitle?: string;
  /** Shaded ranges drawn under the series of the same name (a sweep's min..max over seeds). */
  bands?: Array<{ name: string; points: Array<{ step: number; lo: number; hi: number }> }>;
}

/** The env tags that have metrics under `prefix` + `env/<tag>/success`, in first-seen order. */
export function tagsOf(metrics: readonly StepMetrics[], prefix: '' | 'val/'): string[] {
  const re = new RegExp(`^${prefix.replace('/', '\\/')}env\\/([^/]+)\\/success$`);
  const tags = new Set<string>();
  for (const m of metrics)
    for (const k of Object.keys(m.metrics)) {
      const hit = re.exec(k);
      if (hit) tags.add(hit[1]);
    }
  return [...tags];
}

/** The points of one metric key (finite values only). */
function points(metrics: readonly StepMetrics[], value: (m: Record<string, number>) => number | undefined) {
  return metrics.flatMap((m) => {
    const v = value(m.metrics);
    return v !== undefined && Number.isFinite(v) ? [{ step: m.step, value: v }] : [];
  });
}

/**
 * Equal up to float rounding: two metrics computed along different paths (all groups' std, and the kept
 * groups' when every group is kept) differ in the last bits, which no chart can show.
 */
function sameValue(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}

/**
 * Series of the given [name, key] pairs, dropping the ones with no points. A series with exactly the
 * points of an earlier one, up to float rounding (e.g. kept groups = all groups with rollout_filter_ratio 1), would be drawn
 * hidden under it: it is merged into that one, named "earlier = later".
 */
function seriesOf(metrics: readonly StepMetrics[], pairs: ReadonlyArray<readonly [string, string]>): Series[] {
  const out: Series[] = [];
  for (const [name, key] of pairs) {
    const pts = points(metrics, (m) => m[key]);
    if (pts.length === 0) continue;
    const same = out.find(
      (s) => s.points.length === pts.length && s.points.every((p, i) => p.step === pts[i].step && sameValue(p.value, pts[i].value)),
    );
    if (same) same.name = `${same.name} = ${name}`;
    else out.push({ name, points: pts });
  }
  return out;
}

/**
 * Overall and per-tag series of an env metric (`env/<name>`, `env/<tag>/<name>`), train and validation.
 * With one tag the per-tag series equal the overall ones and are left out.
 */
function perTag(metrics: readonly StepMetrics[], name: string): Series[] {
  const pairs: Array<readonly [string, string]> = [];
  for (const [label, prefix] of [
    ['train', ''],
    ['val', 'val/'],
  ] as const) {
    pairs.push([label, `${prefix}env/${name}`]);
    const tags = tagsOf(metrics, prefix);
    if (tags.length > 1) for (const tag of tags) pairs.push([`${label} ${tag}`, `${prefix}env/${tag}/${name}`]);
  }
  return seriesOf(metrics, pairs);
}

/** Per tag, train and val: the fraction of episodes truncated by each cause (turn cap, sequence_length). */
function truncation(metrics: readonly StepMetrics[]): Series[] {
  const pairs: Array<readonly [string, string]> = [];
  for (const [label, prefix] of [
    ['train', ''],
    ['val', 'val/'],
  ] as const) {
    for (const tag of tagsOf(metrics, prefix)) {
      pairs.push([`${label} ${tag} turn cap`, `${prefix}env/${tag}/truncated_by_turn_cap`]);
      pairs.push([`${label} ${tag} sequence_length`, `${prefix}env/${tag}/truncated_by_length`]);
    }
  }
  return seriesOf(metrics, pairs);
}

/**
 * The report's charts, in display order: success, score, in_group_std, entropy, grad_norm, kl,
 * clipfrac, lr, template_collapse, response_length, truncated, time (data-chart ids).
 */
export function chartsOf(config: RunConfig, metrics: readonly StepMetrics[]): Chart[] {
  const guard = config.collapse_guard;
  const fired = metrics.filter((m) => m.metrics['collapse/fired'] === 1).map((m) => m.step);
  const chart = (
    id: string,
    title: string,
    unit: string,
    y: Chart['y'],
    series: Series[],
    floor: Chart['floor'] = null,
    marks: number[] = [],
  ): Chart => ({ id, title, unit, y, series, floor, marks });
  const nn = 'nonNegative';
  const other = (m: Record<string, number>) => {
    const [step, rollout, update] = [m['time/step'], m['time/rollout'], m['time/update']];
    return step === undefined || rollout === undefined || update === undefined ? undefined : Math.max(0, step - rollout - update);
  };
  return [
    chart('success', 'Success rate (train and validation)', 'success', { fixed: [0, 1] }, perTag(metrics, 'success')),
    chart('score', 'Mean episode score', 'score', 'data', perTag(metrics, 'score')),
    chart(
      'in_group_std',
      'In-group reward std (StarPO-S filter input)',
      'std',
      nn,
      seriesOf(metrics, [
        ['all groups', 'rollout/in_group_std'],
        ['kept groups', 'rollout/chosen_in_group_std'],
      ]),
      guard.enabled ? { value: guard.min_in_group_std, label: 'collapse_guard min_in_group_std' } : null,
      fired,
    ),
    chart(
      'entropy',
      'Token entropy of the policy',
      'nats',
      nn,
      seriesOf(metrics, [['actor', 'actor/entropy']]),
      guard.enabled ? { value: guard.min_entropy, label: 'collapse_guard min_entropy' } : null,
      fired,
    ),
    chart(
      'grad_norm',
      'Gradient norm (before clipping)',
      'norm',
      nn,
      seriesOf(metrics, [
        ['actor mean', 'actor/grad_norm'],
        ['actor max', 'actor/grad_norm_max'],
        ['critic mean', 'critic/grad_norm'],
      ]),
    ),
    chart(
      'kl',
      'KL',
      'nats',
      'data',
      seriesOf(metrics, [
        ['approx KL (old vs new)', 'actor/approxkl'],
        ['policy KL', 'actor/policykl'],
        ['KL loss (vs reference)', 'actor/kl_loss'],
        ['token KL in rewards', 'critic/kl'],
      ]),
    ),
    chart(
      'clipfrac',
      'Clip fraction',
      'fraction',
      nn,
      seriesOf(metrics, [
        ['actor', 'actor/clipfrac'],
        ['ratio high', 'actor/ppo_ratio_high_clipfrac'],
        ['ratio low', 'actor/ppo_ratio_low_clipfrac'],
        ['critic value', 'critic/clipfrac'],
      ]),
    ),
    chart(
      'lr',
      'Learning rate (first optimizer step of the update)',
      'lr',
      nn,
      seriesOf(metrics, [
        ['actor', 'actor/lr'],
        ['critic', 'critic/lr'],
      ]),
    ),
    chart(
      'template_collapse',
      'Input dependence of the first reply (RAGEN-2 collapse_detection)',
      'nats per token / accuracy',
      'data',
      seriesOf(metrics, [
        ['mutual information', 'collapse_first_turn_sample/mi_estimate'],
        ['retrieval accuracy above chance', 'collapse_first_turn_sample/retrieval_above_chance'],
      ]),
    ),
    chart('response_length', 'Response length', 'tokens per episode', nn, perTag(metrics, 'response_length')),
    chart('truncated', 'Episodes truncated, by cause', 'fraction', { fixed: [0, 1] }, truncation(metrics)),
    chart(
      'time',
      'Seconds per step',
      'seconds',
      nn,
      [
        ...seriesOf(metrics, [
          ['step', 'time/step'],
          ['rollout', 'time/rollout'],
          ['update', 'time/update'],
        ]),
        { name: 'orchestration and validation', points: points(metrics, other) },
      ].filter((s) => s.points.length > 0),
    ),
  ];
}
