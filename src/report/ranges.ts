/** Compact lists for messages: [0, 1, 2, 3, 5] -> "0-3, 5". Pure. */

/** Sorted, de-duplicated integers as comma-separated runs ("0-3, 5"); "none" when empty. */
export function integerRanges(values: Iterable<number>): string {
  const xs = [...new Set(values)].sort((a, b) => a - b);
  if (xs.length === 0) return 'none';
  const parts: string[] = [];
  let start = xs[0];
  let prev = xs[0];
  for (const x of [...xs.slice(1), Number.NaN]) {
    if (x === prev + 1) { prev = x; continue; }
    parts.push(start === prev ? String(start) : `${start}-${prev}`);
    start = prev = x;
  }
  return parts.join(', ');
}
