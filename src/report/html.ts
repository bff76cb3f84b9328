/**
 * The `starpo report` page: one self-contained HTML document (inline CSS, inline SVG charts, the
 * trajectory data as inline JSON and an inline vanilla-JS browser, no external references), so it
 * opens offline without a single network request. Stable hooks for tests and scripts:
 * `data-section` on every section (summary, charts, validation, collapse, trajectories),
 * `data-chart="<id>"` on every chart figure (charts.ts ids), and in the trajectory browser
 * `.group`, `.trajectory` and `.turn` elements (browser.js). Pure.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunConfig, RunSpec, StepMetrics } from '../contract';
import { describeCompute } from '../workflows/format';
import type { Chart } from './charts';
import type { ShownStep } from './groups';
import { fmt, integerRanges } from './text';

/** Everything the page shows. */
export interface ReportContent {
  spec: RunSpec;
  metrics: StepMetrics[];
  /** Charts with their SVG, or null when a chart has no points in this run. */
  charts: Array<{ chart: Chart; svg: string | null }>;
  /** Train steps for the trajectory browser, ascending. */
  steps: ShownStep[];
  /** Train steps with rollouts that the browser leaves out (the --trajectory-steps cap). */
  omittedSteps: number[];
  /** ISO time the report was made. */
  generatedAt: string;
  /** The run's state when the report was made (cli/report.ts runStateText). */
  state: string;
  /** Legend lines of the grid observations (groups.ts gridLegends); empty when no env draws a grid. */
  legends: string[];
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** JSON safe inside a <script> element (no `</script>`, no HTML comment openers). */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** A file shipped beside this one (the stylesheet, the browser script). */
export const asset = (name: string) => readFileSync(join(__dirname, name), 'utf8');

/** The last value of a metric over the steps, with its step. */
function last(metrics: readonly StepMetrics[], key: string): { step: number; value: number } | null {
  for (let i = metrics.length - 1; i >= 0; i--) {
    const v = metrics[i].metrics[key];
    if (v !== undefined) return { step: metrics[i].step, value: v };
  }
  return null;
}

/**
 * Where the steps computed: each distinct rollout/update backend with the steps that used it, e.g.
 * "rollout wasm (CPU), update tensorflow (CPU) (steps 0-9)"; '-' when no step recorded it.
 */
export function computeSummary(metrics: readonly StepMetrics[]): string {
  const steps = new Map<string, number[]>();
  for (const m of metrics) {
    if (m.compute) steps.set(describeCompute(m.compute), [...(steps.get(describeCompute(m.compute)) ?? []), m.step]);
  }
  if (steps.size === 0) return '-';
  return [...steps].map(([text, s]) => `${text} (step${s.length > 1 ? 's' : ''} ${integerRanges(s)})`).join('; ');
}

function summary(c: ReportContent): string {
  const { config } = c.spec;
  const trained = c.metrics.filter((m) => m.metrics['time/step'] !== undefined).length;
  const train = last(c.metrics, 'env/success');
  const val = last(c.metrics, 'val/env/success');
  const rows: Array<[string, string]> = [
    ['run', c.spec.runId],
    ['state', c.state],
    ['config', c.spec.configName],
    ['model', String(config.pretrain)],
    ['env tags', [...new Set([...config.train_env_manager.tags, ...config.val_env_manager.tags])].join(', ')],
    ['steps', `${trained} of ${config.max_steps} trained`],
    ['last train success', train ? `${fmt(train.value)} (step ${train.step})` : '-'],
    ['last validation success', val ? `${fmt(val.value)} (step ${val.step})` : '-'],
    ['compute', computeSummary(c.metrics)],
    [
      'algorithm',
      `${config.adv_estimator}, reward_normalization ${config.reward_normalization.grouping}/${config.reward_normalization.method}, rollout_filter ${config.rollout_filter_type} ${config.rollout_filter_ratio}`,
    ],
  ];
  return `<section data-section="summary"><table class="summary">${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('')}</table></section>`;
}

/** What an empty section says: the run has no step yet (running, in warm-up), or the metric is absent. */
function emptyText(c: ReportContent, absent: string): string {
  return c.metrics.length === 0 ? 'no step completed yet' : absent;
}

function charts(c: ReportContent): string {
  const figures = c.charts.map(({ chart, svg }) => {
    const body = svg ?? `<p class="empty">${emptyText(c, 'not recorded in this run')}</p>`;
    const floor = chart.floor
      ? `<figcaption class="note">dashed grey: ${escapeHtml(chart.floor.label)} ${chart.floor.value}</figcaption>`
      : '';
    const marks =
      chart.marks.length > 0
        ? `<figcaption class="note alert">red: collapse_guard fired at step ${chart.marks.join(', ')}</figcaption>`
        : '';
    return `<figure class="chart" data-chart="${escapeHtml(chart.id)}"><figcaption>${escapeHtml(chart.title)}</figcaption>${body}${floor}${marks}</figure>`;
  });
  return `<section data-section="charts"><h2>Learning curves</h2><div class="charts">${figures.join('')}</div></section>`;
}

/** The validation table: one row per evaluation, success and score overall and per tag. */
function validation(c: ReportContent): string {
  const evals = c.metrics.filter((m) => m.metrics['val/env/success'] !== undefined);
  if (evals.length === 0)
    return `<section data-section="validation"><h2>Validation</h2><p class="empty">${emptyText(c, `no evaluation in this run (eval_steps ${c.spec.config.eval_steps})`)}</p></section>`;
  const tags = [...new Set(evals.flatMap((m) => Object.keys(m.metrics).flatMap((k) => /^val\/env\/([^/]+)\/success$/.exec(k)?.[1] ?? [])))];
  const cols: Array<[string, string]> = [
    ['success', 'val/env/success'],
    ['score', 'val/score'],
    ...tags.flatMap(
      (t): Array<[string, string]> => [
        [`${t} success`, `val/env/${t}/success`],
        [`${t} score`, `val/${t}/score`],
      ],
    ),
  ];
  const head = `<tr><th>step</th>${cols.map(([name]) => `<th>${escapeHtml(name)}</th>`).join('')}</tr>`;
  const rows = evals.map(
    (m) => `<tr data-step="${m.step}"><td>${m.step}</td>${cols.map(([, key]) => `<td>${fmt(m.metrics[key])}</td>`).join('')}</tr>`,
  );
  return (
    `<section data-section="validation"><h2>Validation</h2><p class="note">per evaluation: success rate and mean group score (val/score), overall and per env tag</p>` +
    `<table class="validation">${head}${rows.join('')}</table></section>`
  );
}

/** The collapse signals: per step in-group std and entropy, cells below the guard's floors highlighted. */
function collapse(c: ReportContent, guard: RunConfig['collapse_guard']): string {
  const steps = c.metrics.filter((m) => m.metrics['rollout/in_group_std'] !== undefined);
  if (steps.length === 0)
    return `<section data-section="collapse"><h2>Collapse signals</h2><p class="empty">${emptyText(c, 'no in-group reward std recorded in this run')}</p></section>`;
  const fired = steps.filter((m) => m.metrics['collapse/fired'] === 1).map((m) => m.step);
  const verdict =
    fired.length > 0
      ? `<p class="alert" data-collapse="fired">collapse_guard fired at step ${fired.join(', ')}</p>`
      : `<p data-collapse="quiet">collapse_guard did not fire${guard.enabled ? '' : ' (disabled in this run; the floors below are its defaults)'}</p>`;
  const cell = (v: number | undefined, floor: number) => `<td class="${v !== undefined && v < floor ? 'signal-low' : ''}">${fmt(v)}</td>`;
  const rows = steps.map(
    (m) =>
      `<tr data-step="${m.step}" class="${m.metrics['collapse/fired'] === 1 ? 'fired' : ''}"><td>${m.step}</td>` +
      `${cell(m.metrics['rollout/in_group_std'], guard.min_in_group_std)}${cell(m.metrics['actor/entropy'], guard.min_entropy)}<td>${m.metrics['collapse/fired'] === 1 ? 'fired' : ''}</td></tr>`,
  );
  return (
    `<section data-section="collapse"><h2>Collapse signals</h2>${verdict}` +
    `<p class="note">RAGEN's echo trap: in-group reward std falls first, then entropy. Highlighted: below min_in_group_std ${guard.min_in_group_std} / min_entropy ${guard.min_entropy}` +
    ` (the guard acts after ${guard.patience} consecutive steps with both low, action ${guard.action}).</p>` +
    `<div class="scroll"><table class="collapse"><tr><th>step</th><th>in-group std</th><th>entropy</th><th>guard</th></tr>${rows.join('')}</table></div></section>`
  );
}

function trajectories(c: ReportContent): string {
  const omitted =
    c.omittedSteps.length > 0 ? `<p class="note">${c.omittedSteps.length} other steps left out (see --trajectory-steps)</p>` : '';
  return (
    `<section data-section="trajectories" id="trajectories"><h2>Trajectories</h2>${omitted}` +
    `<p class="note">Train episodes of a step by env group; normalised score and advantage (mean over the response tokens, after whitening and advantage_clip) are what the update used.</p>` +
    c.legends.map((line) => `<p class="note legend">grid symbols: ${escapeHtml(line)}</p>`).join('') +
    `<div class="controls"><label>step <select id="step-select"></select></label> <label>group <select id="group-select"></select></label></div>` +
    `<div id="group-table"></div><div id="trajectory-view"></div>` +
    `<script type="application/json" id="trajectory-data">${scriptJson(c.steps)}</script></section>`
  );
}

/** The whole document. */
export function reportHtml(c: ReportContent): string {
  const title = `starpo report · ${c.spec.runId}`;
  return (
    `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(title)}</title><style>${asset('report.css')}</style></head><body>` +
    `<header><h1>${escapeHtml(title)}</h1><p class="note">made ${escapeHtml(c.generatedAt)} by <code>starpo report ${escapeHtml(c.spec.runId)}</code></p></header>` +
    `${summary(c)}${charts(c)}${validation(c)}${collapse(c, c.spec.config.collapse_guard)}${trajectories(c)}` +
    `<script>${asset('browser.js')}</script></body></html>\n`
  );
}
