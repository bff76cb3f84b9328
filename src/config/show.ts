/**
 * Values and text for error messages: numbers as YAML writes them where JSON cannot, unprintable
 * characters escaped, long text clipped, so a message never floods or garbles the terminal.
 */

/** Characters a message never echoes raw: controls, lone surrogates, the replacement and line/paragraph separators. */
const UNPRINTABLE = /\p{Cc}|\p{Cs}|[\u2028\u2029\ufffd]/gu;

/** Longest text a message echoes before cutting it. */
const CLIP = 120;

const escapeUnprintable = (text: string) => text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
const count = (n: number) => n.toLocaleString('en-US');
// Characters are code points: a cut never splits an emoji's surrogate pair, and a count is what a reader sees.
const chars = (text: string) => Array.from(text);

/**
 * Text for a message: unprintable characters escaped as \uXXXX, at most `max` characters, with the
 * full length after a cut (a value may be a whole binary file).
 */
export function clip(text: string, max = CLIP): string {
  const escaped = chars(escapeUnprintable(text));
  return escaped.length <= max ? escaped.join('') : `${escaped.slice(0, max).join('')}... (${count(chars(text).length)} characters)`;
}

/**
 * A value for messages, as YAML wrote it where JSON cannot (.nan, .inf, -.inf), clipped (clip) so a
 * huge or binary value does not flood the terminal.
 */
export function show(v: unknown): string {
  if (v === undefined) return '(missing)';
  if (typeof v === 'number' && !Number.isFinite(v)) return Number.isNaN(v) ? '.nan' : v > 0 ? '.inf' : '-.inf';
  // A string is cut inside its quotes, so the echo still reads as one string, and counts its own characters.
  if (typeof v === 'string') {
    const all = chars(v);
    const quoted = escapeUnprintable(JSON.stringify(all.slice(0, CLIP).join('')));
    return all.length > CLIP ? `${quoted}... (${count(all.length)} characters)` : quoted;
  }
  return clip(JSON.stringify(v, (_k, x) => (typeof x === 'number' && !Number.isFinite(x) ? show(x) : x)) ?? String(v));
}
