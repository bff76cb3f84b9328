/**
 * The README's `npm start` figures are those of the newest dated entry of docs/results.md's `npm start`
 * section: its date, its minutes and its held-out success after the warm start and at step 200. A new
 * measurement goes into results.md first; this test then says which README figures to update.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const root = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** The figures of one dated entry: date, minutes, success at step 0 and at step 200. */
interface Entry {
  date: string;
  minutes: string;
  first: string;
  last: string;
}

/** The dated entries of results.md's `npm start` section that give minutes and both successes, in text order. */
function npmStartEntries(results: string): Entry[] {
  const section = results.split(/^## /m).find((s) => s.startsWith('`npm start`'));
  assert.ok(section, 'docs/results.md has a `npm start` section');
  return section.split(/\n\n/).flatMap((paragraph) => {
    const date = paragraph.match(/^\*\*(\d{4}-\d{2}-\d{2})\*\*/)?.[1];
    const minutes = paragraph.match(/\(([\d.]+) min\)/)?.[1];
    const first = paragraph.match(/step 0:\s+(\d\.\d{3})/)?.[1];
    const last = paragraph.match(/\b200:\s+(\d\.\d{3})/)?.[1];
    return date && minutes && first && last ? [{ date, minutes, first, last }] : [];
  });
}

test("the README's npm start figures are the newest results.md entry's", () => {
  const entries = npmStartEntries(read('docs/results.md'));
  assert.ok(entries.length > 0, 'results.md has dated npm start entries with minutes and success');
  // the newest date; of entries on the same date, the later one in the text
  const newest = entries.reduce((a, b) => (b.date >= a.date ? b : a));
  const readme = read('README.md');
  for (const figure of [newest.date, `${newest.minutes} min`, `${newest.first} after the warm start`, `${newest.last} at step 200`])
    assert.ok(readme.includes(figure), `README.md quotes ${JSON.stringify(figure)} (docs/results.md, npm start, ${newest.date})`);
});
