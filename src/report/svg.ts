/**
 * Draws a Chart (charts.ts) as a self-contained SVG string with Vega, headless in Node
 * (`new vega.View(vega.parse(spec), { renderer: 'none' }).toSVG()`): lines with points per series, a
 * legend, a dashed horizontal floor and red dashed vertical marks. No fonts, images or links are
 * referenced, so the SVG draws offline. Vega is an ES module (top-level await): loaded with import().
 */
import type { Spec } from 'vega';
import type { Chart } from './charts';

/** Plot size in pixels (the SVG adds axes and legend around it). */
const WIDTH = 420;
const HEIGHT = 180;

/**
 * The y range of a chart: its fixed range, else the extent of the values (floor included), widened
 * around a flat series (a constant v gets v +- |v| / 10, or +- 0.05 for 0) so the axis shows a line
 * with readable ticks, and kept at or above 0 for non-negative metrics.
 */
export function yExtent(values: readonly number[], y: Chart['y']): [number, number] {
  if (typeof y === 'object') return y.fixed;
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (hi === lo) {
    const pad = lo !== 0 ? Math.abs(lo) / 10 : 0.05;
    [lo, hi] = [lo - pad, hi + pad];
  }
  return [y === 'nonNegative' ? Math.max(0, lo) : lo, hi];
}

/** Pixels per character of a legend label (Vega's default 10 px sans-serif), and per entry for its symbol and gap. */
const LABEL_CHAR_PX = 6;
const ENTRY_PX = 30;

/**
 * Legend entries per row that fit the plot's width: one row of long names (e.g. the truncation chart's
 * "train FrozenLake sequence_length" x 4) would make the SVG twice as wide, and the page then draws it at
 * half its panel with unreadable labels.
 */
function legendColumns(names: readonly string[]): number {
  const entry = Math.max(0, ...names.map((n) => n.length)) * LABEL_CHAR_PX + ENTRY_PX;
  return Math.max(1, Math.floor(WIDTH / entry));
}

/** The Vega spec of a chart. */
export function vegaSpec(c: Chart): Spec {
  const rows = c.series.flatMap((s) => s.points.map((p) => ({ series: s.name, step: p.step, value: p.value })));
  const bands = (c.bands ?? []).flatMap((b) => b.points.map((p) => ({ series: b.name, ...p })));
  const steps = rows.map((r) => r.step);
  const lo = Math.min(...steps);
  const hi = Math.max(lo + 1, ...steps);
  const [yLo, yHi] = yExtent(
    [...rows.map((r) => r.value), ...bands.flatMap((b) => [b.lo, b.hi]), ...(c.floor ? [c.floor.value] : [])],
    c.y,
  );
  const enterXY = { x: { scale: 'x', field: 'step' }, y: { scale: 'y', field: 'value' } };
  return {
    width: WIDTH,
    height: HEIGHT,
    padding: 5,
    autosize: 'pad',
    background: 'white',
    data: [
      { name: 'points', values: rows },
      { name: 'bands', values: bands },
      { name: 'floor', values: c.floor ? [c.floor] : [] },
      { name: 'marks', values: c.marks.map((step) => ({ step })) },
    ],
    scales: [
      { name: 'x', type: 'linear', domain: [lo, hi], range: 'width', zero: false },
      { name: 'y', type: 'linear', domain: [yLo, yHi], range: 'height', nice: true, zero: false },
      { name: 'color', type: 'ordinal', domain: { data: 'points', field: 'series' }, range: 'category' },
    ],
    axes: [
      c.xTitle
        ? { orient: 'bottom', scale: 'x', title: c.xTitle }
        : { orient: 'bottom', scale: 'x', title: 'step', tickMinStep: 1, format: 'd' },
      { orient: 'left', scale: 'y', title: c.unit, grid: true },
    ],
    legends: [
      {
        stroke: 'color',
        fill: 'color',
        orient: 'bottom',
        direction: 'horizontal',
        columns: legendColumns(c.series.map((x) => x.name)),
        symbolType: 'circle',
        labelLimit: 300,
      },
    ],
    marks: [
      {
        type: 'group',
        from: { facet: { name: 'one_band', data: 'bands', groupby: 'series' } },
        marks: [
          {
            type: 'area',
            from: { data: 'one_band' },
            sort: { field: 'datum.step' },
            encode: {
              enter: {
                x: { scale: 'x', field: 'step' },
                y: { scale: 'y', field: 'lo' },
                y2: { scale: 'y', field: 'hi' },
                fill: { scale: 'color', field: 'series' },
                fillOpacity: { value: 0.18 },
              },
            },
          },
        ],
      },
      {
        type: 'group',
        from: { facet: { name: 'one_series', data: 'points', groupby: 'series' } },
        marks: [
          {
            type: 'line',
            from: { data: 'one_series' },
            sort: { field: 'datum.step' },
            encode: { enter: { ...enterXY, stroke: { scale: 'color', field: 'series' }, strokeWidth: { value: 2 } } },
          },
        ],
      },
      {
        type: 'symbol',
        from: { data: 'points' },
        encode: { enter: { ...enterXY, fill: { scale: 'color', field: 'series' }, size: { value: 18 } } },
      },
      {
        type: 'rule',
        from: { data: 'floor' },
        encode: {
          enter: {
            x: { value: 0 },
            x2: { signal: 'width' },
            y: { scale: 'y', field: 'value' },
            stroke: { value: '#7f7f7f' },
            strokeDash: { value: [6, 3] },
          },
        },
      },
      {
        type: 'rule',
        from: { data: 'marks' },
        encode: {
          enter: {
            x: { scale: 'x', field: 'step' },
            y: { value: 0 },
            y2: { signal: 'height' },
            stroke: { value: '#d62728' },
            strokeWidth: { value: 2 },
            strokeDash: { value: [4, 3] },
          },
        },
      },
    ],
  };
}

/**
 * The chart as an SVG document string.
 * @throws Error when the chart has no points (callers show a note instead)
 */
export async function chartSvg(c: Chart): Promise<string> {
  if (c.series.length === 0) throw new Error(`chart ${c.id} has no points`);
  const vega = await import('vega');
  const view = new vega.View(vega.parse(vegaSpec(c)), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
