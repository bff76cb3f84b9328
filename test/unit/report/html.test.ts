/**
 * The `starpo report` page pieces without servers: which metrics each chart plots (per tag, floors,
 * collapse marks, coinciding series merged), the Vega SVG, the page's stable hooks and its
 * self-containment (nothing external, trajectory text cannot close the script element), a run with
 * no step yet, the grid legends, and the step spreading of the browser.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StepMetrics, Trajectory } from '../../../src/contract';
import { spreadSteps } from '../../../src/report/build';
import { chartsOf } from '../../../src/report/charts';
import { gridLegends, groupStep } from '../../../src/report/groups';
import { computeSummary, reportHtml } from '../../../src/report/html';
import { chartSvg, yExtent } from '../../../src/report/svg';
import { integerRanges } from '../../../src/report/text';
import { fixtureConfig } from '../../helpers/fixture';

const config = fixtureConfig({ collapse_guard: { enabled: true, patience: 1 } });

/** Three steps of two tags; step 2's guard fired; step 3 is the final validation only. */
const metrics: StepMetrics[] = [0, 1, 2].map((step) => ({
  step,
  metrics: {
    'env/success': step / 4,
    'env/Lake/success': step / 2,
    'env/Box/success': 0,
    'env/score': step - 1,
    'rollout/in_group_std': 0.5 / (step + 1),
    'actor/entropy': 2 - step,
    'actor/grad_norm': 1,
    'actor/lr': 1e-4,
    'time/step': 10,
    'time/rollout': 6,
    'time/update': 3,
    'env/response_length': 20 + step,
    'env/Lake/truncated_by_turn_cap': 0.5,
    'env/Lake/truncated_by_length': 0.25,
    ...(step % 2 === 0 ? { 'val/env/success': step / 3, 'val/env/Lake/success': 0.5, 'val/score': 0.1, 'val/Lake/score': 0.2 } : {}),
    ...(step === 2 ? { 'collapse/fired': 1 } : {}),
  },
}));
metrics.push({ step: 3, metrics: { 'val/env/success': 0.75, 'val/env/Lake/success': 0.75 } });

test('charts: train and val series per tag, collapse floors and marks, the time split', () => {
  const charts = chartsOf(config, metrics);
  assert.deepEqual(
    charts.map((c) => c.id),
    [
      'success',
      'score',
      'in_group_std',
      'entropy',
      'grad_norm',
      'kl',
      'clipfrac',
      'lr',
      'template_collapse',
      'response_length',
      'truncated',
      'time',
    ],
  );
  const byId = Object.fromEntries(charts.map((c) => [c.id, c]));
  assert.deepEqual(
    byId.truncated.series.map((x: { name: string }) => x.name),
    ['train Lake turn cap', 'train Lake sequence_length'],
    'one series per tag and cause',
  );
  assert.deepEqual(
    byId.success.series.map((s) => s.name),
    ['train', 'train Lake', 'train Box', 'val'],
  );
  assert.deepEqual(byId.success.series.find((s) => s.name === 'val')!.points, [
    { step: 0, value: 0 },
    { step: 2, value: 2 / 3 },
    { step: 3, value: 0.75 },
  ]);
  assert.deepEqual(byId.entropy.floor, { value: 0.05, label: 'collapse_guard min_entropy' });
  assert.deepEqual(byId.entropy.marks, [2]);
  assert.deepEqual(byId.in_group_std.marks, [2]);
  assert.deepEqual(byId.kl.series, [], 'no KL metric in this run');
  const other = byId.time.series.find((s) => s.name === 'orchestration and validation')!;
  assert.deepEqual(
    other.points.map((p) => p.value),
    [1, 1, 1],
  );
});

test('the SVG is drawn headless by Vega, with the legend and no external reference', async () => {
  const [success] = chartsOf(config, metrics);
  const svg = await chartSvg(success);
  assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  for (const name of ['train Lake', 'train Box', 'val']) assert.ok(svg.includes(`>${name}</text>`), name);
  assert.doesNotMatch(svg.replace(/xmlns(:xlink)?="[^"]*"/g, ''), /https?:|url\(|<image|@import/);
  assert.deepEqual(yExtent([3, 3], 'data'), [2.7, 3.3]);
  assert.deepEqual(yExtent([0, 0], 'nonNegative'), [0, 0.05]);
  assert.deepEqual(yExtent([0.2], { fixed: [0, 1] }), [0, 1]);
});

test('the page: stable hooks, validation and collapse sections, and trajectory text kept inside its script', () => {
  const turn = {
    observation: 'P_\n_G',
    response: '</script><script>alert(1)</script>',
    action: null,
    reward: -0.1,
    actionIsValid: false,
    actionIsEffective: false,
  };
  const t = {
    trajGroupId: 'Lake_0_0_5',
    trajId: 'Lake_0_0_5_0',
    tag: 'Lake',
    groupId: 0,
    envId: 0,
    seed: 5,
    split: 'train',
    step: 2,
    turns: [turn],
    episodeScore: -0.1,
    success: false,
    truncated: true,
  } as Trajectory;
  const html = reportHtml({
    spec: { runId: 'r1', configName: 'tiny', config },
    metrics,
    charts: chartsOf(config, metrics).map((chart) => ({ chart, svg: chart.series.length > 0 ? '<svg></svg>' : null })),
    steps: [groupStep(2, [t], null)],
    omittedSteps: [],
    generatedAt: '2026-01-01T00:00:00Z',
    state: 'COMPLETED after 2 steps',
    legends: gridLegends(config, ['FrozenLake']),
  });
  for (const id of ['success', 'entropy', 'time', 'kl']) assert.ok(html.includes(`<figure class="chart" data-chart="${id}">`), id);
  assert.match(html, /data-chart="kl"><figcaption>KL<\/figcaption><p class="empty">not recorded in this run/);
  for (const s of ['summary', 'charts', 'validation', 'collapse', 'trajectories']) assert.ok(html.includes(`data-section="${s}"`), s);
  assert.match(html, /<p class="alert" data-collapse="fired">collapse_guard fired at step 2<\/p>/);
  assert.match(html, /<tr data-step="3"><td>3<\/td><td>0\.750<\/td><td>-<\/td><td>0\.750<\/td><td>-<\/td><\/tr>/, 'final validation row');
  // the response is data, never markup: one script element for the data and one for the browser
  assert.equal(html.split('</script>').length - 1, 2);
  assert.ok(html.includes('\\u003c/script>\\u003cscript>alert(1)\\u003c/script>'));
  assert.doesNotMatch(html, /<(link|img|iframe)\b|\bsrc=|https?:\/\//);
  assert.match(html, /<tr><th>state<\/th><td>COMPLETED after 2 steps<\/td><\/tr>/);
  assert.match(
    html,
    /<p class="note legend">grid symbols: FrozenLake: P player, _ frozen, O hole, G goal, X player in a hole, √ player on the goal<\/p>/,
  );
});

test('a run with no step yet: the summary says its state, empty sections say no step completed yet', () => {
  const html = reportHtml({
    spec: { runId: 'r0', configName: 'tiny', config },
    metrics: [],
    charts: chartsOf(config, []).map((chart) => ({ chart, svg: null })),
    steps: [],
    omittedSteps: [],
    generatedAt: '2026-01-01T00:00:00Z',
    state: 'RUNNING: in warm-up (preparing the step-0 policy), step 0 of 6 done',
    legends: [],
  });
  assert.match(html, /<tr><th>state<\/th><td>RUNNING: in warm-up \(preparing the step-0 policy\), step 0 of 6 done<\/td>/);
  assert.doesNotMatch(html, /not recorded in this run|no evaluation in this run/);
  for (const section of ['charts', 'validation', 'collapse']) {
    assert.match(html, new RegExp(`data-section="${section}">.*?<p class="empty">no step completed yet</p>`), section);
  }
});

test('chart series with identical points are drawn once, under both names', () => {
  const same = [0, 1].map((step) => ({
    step,
    metrics: {
      'rollout/in_group_std': 0.4 + step,
      'rollout/chosen_in_group_std': 0.4 + step,
      'actor/grad_norm': 1,
      'actor/grad_norm_max': 2,
    },
  }));
  const byId = Object.fromEntries(chartsOf(config, same).map((c) => [c.id, c]));
  assert.deepEqual(
    byId.in_group_std.series.map((s) => s.name),
    ['all groups = kept groups'],
  );
  assert.deepEqual(
    byId.grad_norm.series.map((s) => s.name),
    ['actor mean', 'actor max'],
    'different series stay apart',
  );
});

test("grid legends come from the envs: FrozenLake symbols, a Sokoban tag's own vocabulary, none for text envs", () => {
  const mixed = fixtureConfig({
    custom_envs: {
      FrozenLake: { env_type: 'frozen_lake' },
      Lake8: { env_type: 'frozen_lake', env_config: { size: 8 } },
      Box: { env_type: 'sokoban', env_config: { grid_lookup: { 0: 'W', 1: '.', 2: 'G', 3: 'C', 4: 'B', 5: 'A', 6: '@' } } },
      Arms: { env_type: 'bandit' },
    },
    train_env_manager: { ...config.train_env_manager, tags: ['FrozenLake', 'Lake8', 'Box', 'Arms'], num_groups_partition: [1, 1, 1, 1] },
    sequence_length: 768, // the Sokoban room's first turn needs more than the fixture's 400
  });
  assert.deepEqual(gridLegends(mixed, ['FrozenLake', 'Lake8', 'Box', 'Arms', 'FrozenLake']), [
    'FrozenLake, Lake8: P player, _ frozen, O hole, G goal, X player in a hole, √ player on the goal',
    'Box: W wall, . empty, G target, C box on target, B box, A player, @ player on target',
  ]);
});

test('the browser spreads its steps evenly, first and last included; messages list steps as ranges', () => {
  assert.deepEqual(spreadSteps([0, 1, 2], 5), [0, 1, 2]);
  assert.deepEqual(spreadSteps([...Array(10).keys()], 4), [0, 3, 6, 9]);
  assert.deepEqual(spreadSteps([4, 5, 6], 1), [6]);
  assert.throws(() => spreadSteps([1], 0), /allowed: an integer >= 1/);
  assert.equal(integerRanges([5, 0, 1, 2, 3, 9, 8]), '0-3, 5, 8-9');
  assert.equal(integerRanges([]), 'none');
});

test('the summary says where the steps computed: each rollout/update backend with its steps', () => {
  const at = (step: number, update?: string): StepMetrics => ({
    step,
    metrics: {},
    ...(update ? { compute: { rollout: [{ backend: 'wasm', device: 'CPU' }], update: { backend: update, device: 'CPU' } } } : {}),
  });
  assert.equal(computeSummary([at(0), at(1)]), '-');
  assert.equal(
    computeSummary([at(0, 'wasm'), at(1, 'wasm'), at(2, 'tensorflow'), at(3), at(4, 'wasm')]),
    'rollout wasm (CPU), update wasm (CPU) (steps 0-1, 4); rollout wasm (CPU), update tensorflow (CPU) (step 2)',
  );
});

test('series equal up to float rounding are drawn once; long legend names wrap instead of widening the chart', async () => {
  const rounded = [0, 1].map((step) => ({
    step,
    metrics: { 'rollout/in_group_std': 0.3, 'rollout/chosen_in_group_std': 0.1 + 0.2 }, // 0.30000000000000004
  }));
  const std = chartsOf(config, rounded).find((c) => c.id === 'in_group_std')!;
  assert.deepEqual(
    std.series.map((s) => s.name),
    ['all groups = kept groups'],
  );

  const cause = (tag: string, k: number) => ({
    [`env/${tag}/success`]: 0.5,
    [`val/env/${tag}/success`]: 0.5,
    [`env/${tag}/truncated_by_turn_cap`]: 0.1 * k,
    [`env/${tag}/truncated_by_length`]: 0.2 * k,
    [`val/env/${tag}/truncated_by_turn_cap`]: 0.3 * k,
    [`val/env/${tag}/truncated_by_length`]: 0.05 * k,
  });
  const truncated = chartsOf(
    config,
    [1, 2].map((step) => ({ step, metrics: cause('FrozenLake', step) })),
  ).find((c) => c.id === 'truncated')!;
  assert.equal(truncated.series.length, 4);
  const width = Number((await chartSvg(truncated)).match(/^<svg [^>]*width="([\d.]+)"/)?.[1]);
  assert.ok(width < 600, `the truncation chart is ${width} px wide`);
});
