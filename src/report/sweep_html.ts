/**
 * The comparison report of a sweep (`starpo report <sweepId>`): one self-contained HTML document with the
 * sweep's summary, the compared curves per grid point (mean and spread over seeds, by step and by wall
 * minutes), the final table per grid point and per seed, and the config keys that differ between runs.
 * Stable hooks: `data-section` (summary, charts, final, seeds, configs), `data-chart`, `data-point` and
 * `data-run` on table rows. Pure.
 */
import type { SweepSpec } from '../contract';
import type { Chart } from './charts';
import { asset, escapeHtml } from './html';
import { pointName } from './sweep_charts';
import { differingKeys, type FinalRow, spread } from './sweep_data';
import { fmt } from './text';

/** Everything the page shows. */
export interface SweepReportContent {
  spec: SweepSpec;
  /** The sweep's state line (Temporal status and its runs by state), or why it is unknown. */
  state: string;
  charts: Array<{ chart: Chart; svg: string }>;
  rows: FinalRow[];
  generatedAt: string;
}

const cells = (values: readonly string[], tag = 'td') => values.map((v) => `<${tag}>${escapeHtml(v)}</${tag}>`).join('');

function summary(c: SweepReportContent): string {
  const s = c.spec;
  const rows: Array<[string, string]> = [
    ['sweep', s.sweepId],
    ['state', c.state],
    ['config', `${s.configName}${s.overrides.length > 0 ? ` ${s.overrides.join(' ')}` : ''}`],
    ['seeds', s.seeds.join(', ')],
    ['grid', s.grid.length > 0 ? s.grid.map((a) => `${a.key} = ${a.values.join(', ')}`).join('; ') : 'none (seeds only)'],
    ['runs', `${s.children.length}, at most ${s.parallel} at a time`],
  ];
  return `<section data-section="summary"><table class="summary">${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('')}</table></section>`;
}

function charts(c: SweepReportContent): string {
  const figures = c.charts.map(
    ({ chart, svg }) =>
      `<figure class="chart" data-chart="${escapeHtml(chart.id)}"><figcaption>${escapeHtml(chart.title)}</figcaption>${svg}</figure>`,
  );
  const body = figures.length > 0 ? `<div class="charts">${figures.join('')}</div>` : '<p class="empty">no run has stored a step yet</p>';
  return `<section data-section="charts"><h2>Curves per grid point</h2>${body}</section>`;
}

/** "0.812 ± 0.031 (0.780-0.850)" over the values present; '-' without any. */
function meanSpread(values: ReadonlyArray<number | null>): string {
  const v = values.filter((x): x is number => x !== null);
  if (v.length === 0) return '-';
  const s = spread(v);
  return `${fmt(s.mean)} ± ${fmt(s.std)} (${fmt(s.min)}-${fmt(s.max)})${v.length < values.length ? `, ${v.length} of ${values.length} runs` : ''}`;
}

/** Per grid point: validation success at the first and last evaluation and the gain, over seeds. */
function final(c: SweepReportContent): string {
  const rows = c.spec.points.map((_, p) => {
    const runs = c.rows.filter((r) => r.point === p);
    const gains = runs.map((r) => (r.firstVal !== null && r.lastVal !== null ? r.lastVal - r.firstVal : null));
    return `<tr data-point="${p}">${cells([
      pointName(c.spec, p),
      meanSpread(runs.map((r) => r.firstVal)),
      meanSpread(runs.map((r) => r.lastVal)),
      meanSpread(gains),
      meanSpread(runs.map((r) => r.bestVal)),
      meanSpread(runs.map((r) => r.minutes)),
    ])}</tr>`;
  });
  return (
    `<section data-section="final"><h2>Final results per grid point</h2>` +
    `<p class="note">Validation success (val/env/success): mean ± std over seeds (lowest-highest). First = the first evaluation (step 0: the warm start); last = the newest.</p>` +
    `<div class="scroll"><table><tr>${cells(['grid point', 'first validation', 'last validation', 'gain', 'best validation', 'wall minutes'], 'th')}</tr>${rows.join('')}</table></div></section>`
  );
}

function seeds(c: SweepReportContent): string {
  const rows = c.rows.map(
    (r) =>
      `<tr data-run="${escapeHtml(r.runId)}">${cells([
        r.runId,
        pointName(c.spec, r.point),
        String(r.seed),
        `${r.steps}/${r.maxSteps}`,
        r.minutes === null ? '-' : r.minutes.toFixed(1),
        fmt(r.firstVal),
        fmt(r.lastVal),
        r.firstVal !== null && r.lastVal !== null ? fmt(r.lastVal - r.firstVal) : '-',
        fmt(r.bestVal),
      ])}</tr>`,
  );
  return `<section data-section="seeds"><h2>Every run</h2><div class="scroll"><table><tr>${cells(
    ['run', 'grid point', 'seed', 'steps', 'wall minutes', 'first validation', 'last validation', 'gain', 'best validation'],
    'th',
  )}</tr>${rows.join('')}</table></div></section>`;
}

/** The config keys whose values differ between runs, a column per run. */
function configs(c: SweepReportContent): string {
  const ids = c.spec.children.map((ch) => ch.run.runId);
  const rows = differingKeys(c.spec).map((d) => `<tr>${cells([d.key, ...ids.map((id) => d.values[id])])}</tr>`);
  return (
    `<section data-section="configs"><h2>Config keys that differ</h2><p class="note">Every other key is the same in all runs (sweeps/${escapeHtml(c.spec.sweepId)}/sweep.json holds each run's whole config).</p>` +
    `<div class="scroll"><table><tr>${cells(['key', ...ids], 'th')}</tr>${rows.join('')}</table></div></section>`
  );
}

/** The whole document. */
export function sweepReportHtml(c: SweepReportContent): string {
  const title = `starpo sweep report · ${c.spec.sweepId}`;
  return (
    `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(title)}</title><style>${asset('report.css')}</style></head><body>` +
    `<header><h1>${escapeHtml(title)}</h1><p class="note">made ${escapeHtml(c.generatedAt)} by <code>starpo report ${escapeHtml(c.spec.sweepId)}</code></p></header>` +
    `${summary(c)}${charts(c)}${final(c)}${seeds(c)}${configs(c)}</body></html>\n`
  );
}
