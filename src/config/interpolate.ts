/**
 * OmegaConf-style interpolation for config trees (OmegaConf docs, "Variable interpolation"), as ROLL's
 * Hydra configs use it. A small resolver of our own: no npm package implements OmegaConf's semantics
 * (typed single references, whole-mapping values, cycle errors).
 */
import { nearestKey } from '../contract';
import { fromNote, type OriginOf, problemsError } from './origins';
import { show } from './show';
import { isMapping, type Mapping } from './tree';
import { MAX_CONFIG_BYTES } from './yaml_text';

/** Options of resolveInterpolations. */
export interface InterpolationOptions {
  /** The file being loaded, for ConfigError messages. */
  source: string;
  /** Where each value came from (origins.ts); named in a message when it is not `source`. */
  originOf?: OriginOf;
}

/** A resolved tree and the top-level keys its interpolations referred to. */
export interface Resolved {
  tree: Mapping;
  /** First segments of every resolved `${...}` (`custom_env` for `${custom_env.FrozenLake}`). */
  referenced: Set<string>;
}

/** A string split into literal text and `${...}` expressions (the expression text may hold `${}`s). */
type Part = { text: string } | { expr: string };

/**
 * The longest string an interpolation may produce, as long as a whole config file may be: nested
 * `${...}`s can double a string per level, and without a bound they exhaust memory before any key is named.
 */
export const MAX_INTERPOLATED_CHARS = MAX_CONFIG_BYTES;

/** Top-level blocks left as written (Hydra's own config). */
const UNRESOLVED_BLOCKS = ['hydra'];

class Resolver {
  private readonly done = new Map<string, unknown>();
  private readonly active: string[] = [];
  readonly referenced = new Set<string>();

  constructor(
    private readonly root: Mapping,
    private readonly opts: InterpolationOptions,
  ) {}

  /** A ConfigError about the value at `path`. */
  fail(path: readonly string[], message: string): never {
    const origin = this.opts.originOf?.(path);
    throw problemsError(this.opts.source, [{ text: `\`${path.join('.')}\`${fromNote(origin, this.opts.source)}: ${message}`, origin }]);
  }

  /** The value of `node` (found at `path`) with every interpolation inside it resolved. */
  resolveNode(path: readonly string[], node: unknown): unknown {
    if (typeof node === 'string') return this.resolveString(path, node);
    if (Array.isArray(node)) return node.map((v, i) => this.resolveNode([...path, String(i)], v));
    if (isMapping(node)) {
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, this.resolveNode([...path, k], v)]));
    }
    return node;
  }

  private resolveString(path: readonly string[], s: string): unknown {
    if (!s.includes('${')) return s;
    const key = path.join('.');
    if (this.done.has(key)) return this.done.get(key);
    const at = this.active.indexOf(key);
    if (at >= 0) {
      const chain = [...this.active.slice(at), key];
      this.fail(chain[0].split('.'), `interpolation cycle: ${chain.join(' -> ')}`);
    }
    this.active.push(key);
    const value = this.evaluate(path, s);
    this.active.pop();
    this.done.set(key, value);
    return value;
  }

  /** Evaluates a string with interpolations: typed when it is exactly one, else text. */
  private evaluate(path: readonly string[], s: string): unknown {
    const parts = this.split(path, s);
    const only = parts.length === 1 ? parts[0] : undefined;
    if (only && 'expr' in only) return this.lookup(path, only.expr);
    const pieces = parts.map((p) => {
      if ('text' in p) return p.text;
      const v = this.lookup(path, p.expr);
      if (v !== null && typeof v === 'object') {
        this.fail(
          path,
          `\`\${${p.expr}}\` is a ${Array.isArray(v) ? 'list' : 'mapping'}; it can only be used as the whole value, not inside ${show(s)}`,
        );
      }
      return String(v);
    });
    const length = pieces.reduce((n, p) => n + p.length, 0);
    if (length > MAX_INTERPOLATED_CHARS) {
      this.fail(
        path,
        `${show(s)} expands to ${length.toLocaleString('en-US')} characters; allowed: at most ${MAX_INTERPOLATED_CHARS.toLocaleString('en-US')}`,
      );
    }
    return pieces.join('');
  }

  /** Splits `s` into text and top-level `${...}` expressions, honouring nesting and `\${`. */
  private split(path: readonly string[], s: string): Part[] {
    const parts: Part[] = [];
    let text = '';
    for (let i = 0; i < s.length; i++) {
      if (s.startsWith('\\${', i)) {
        text += '${';
        i += 2;
      } else if (s.startsWith('${', i)) {
        let depth = 1;
        let j = i + 2;
        for (; j < s.length && depth > 0; j++) {
          if (s.startsWith('${', j)) depth++;
          else if (s[j] === '}') depth--;
        }
        if (depth > 0) this.fail(path, `${show(s)}: unterminated interpolation`);
        if (text) parts.push({ text });
        text = '';
        parts.push({ expr: s.slice(i + 2, j - 1) });
        i = j - 1;
      } else text += s[i];
    }
    if (text || parts.length === 0) parts.push({ text });
    return parts;
  }

  /** The resolved value an expression refers to (inner `${}`s are resolved first, as text). */
  private lookup(path: readonly string[], rawExpr: string): unknown {
    const expr = rawExpr.includes('${') ? String(this.evaluate(path, rawExpr)) : rawExpr.trim();
    if (expr.includes(':')) this.fail(path, `\`\${${expr}}\`: resolvers are not supported (only \`\${path.to.key}\` references)`);
    if (expr === '' || expr.startsWith('.')) this.fail(path, `\`\${${expr}}\`: only absolute references like \`\${a.b.c}\` are supported`);
    this.referenced.add(expr.split('.')[0]);
    let node: unknown = this.root;
    let resolved = false; // past a reference, `node` is already a resolved value
    const walked: string[] = [];
    for (const seg of expr.split('.')) {
      if (typeof node === 'string' && !resolved) {
        node = this.resolveString(walked, node);
        resolved = true;
      }
      const known = isMapping(node) ? Object.keys(node) : [];
      if (isMapping(node) && Object.hasOwn(node, seg)) node = node[seg];
      else if (Array.isArray(node) && /^\d+$/.test(seg) && Number(seg) < node.length) node = node[Number(seg)];
      else {
        const where = walked.length === 0 ? 'at the top level' : `under \`${walked.join('.')}\``;
        const near = nearestKey(seg, known);
        this.fail(path, `\`\${${expr}}\` cannot be resolved: no key \`${seg}\` ${where}${near ? `; did you mean \`${near}\`?` : ''}`);
      }
      walked.push(seg);
    }
    return resolved ? node : this.resolveNode(walked, node);
  }
}

/**
 * Resolves every interpolation of a config tree; the input is not modified. `${key}` and `${a.b.c}` are
 * absolute paths into the merged root. A string that is exactly one interpolation takes the referenced
 * value with its type (number, bool, a whole mapping); interpolations inside a longer string are
 * substituted as text. References may chain (`a: ${b}`, `b: ${c}`), go through other references
 * (`${alias.key}`) and nest (`${a.${b}}`); `\${` is a literal `${`. Resolvers (`${oc.env:HOME}`) and
 * relative paths are not supported. The `hydra:` block is left as written (starpo ignores it).
 * @returns the resolved tree and the top-level keys referred to (preflight/load.ts keeps those as variables)
 * @throws ConfigError naming the key that holds a bad interpolation: an unresolved path (with the
 *         nearest existing key), a cycle, a resolver, an unterminated `${`, or a mapping inside text
 */
export function resolveInterpolations(root: Mapping, opts: InterpolationOptions): Resolved {
  const resolver = new Resolver(root, opts);
  const tree = Object.fromEntries(
    Object.entries(root).map(([k, v]) => [k, UNRESOLVED_BLOCKS.includes(k) ? v : resolver.resolveNode([k], v)]),
  );
  return { tree, referenced: resolver.referenced };
}
