/**
 * Config YAML read within bounds (docs/configs.md, "Limits"), so no file can exhaust the process before
 * it is validated: a size limit checked before reading, UTF-8 text only, YAML's core schema only (an
 * unknown tag such as `!!python/name:...` is refused, not read as a string), and a cap on alias
 * expansion (billion laughs). Every problem names the key it sits under and its line.
 */
import { readFileSync, statSync } from 'node:fs';
import { type Document, isAlias, isCollection, isNode, isPair, isScalar, LineCounter, type Node, parseDocument, visit } from 'yaml';
import { clip } from './show';

/** The largest config file read; ROLL's and starpo's configs are a few KB. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** yaml's maxAliasCount: resolved aliases allowed, each weighted by the aliases inside it (yaml's own default). */
export const MAX_ALIAS_COUNT = 100;

/** A file or text that is not a readable config: one line per problem, naming the key where there is one. */
export class YamlInputError extends Error {
  override name = 'YamlInputError';
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

/** What the OS said, in words for the common codes. */
const REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ELOOP: 'too many symbolic links',
};
const reason = (err: unknown) => {
  const code = (err as NodeJS.ErrnoException).code;
  return code ? `${REASONS[code] ?? code}` : clip((err as Error).message, 200);
};

/**
 * The text of a config file, checked before it is read: a regular file, at most MAX_CONFIG_BYTES,
 * UTF-8 without control characters.
 * @throws YamlInputError saying what the path is instead (missing, a folder, unreadable, too big, binary)
 */
export function readConfigText(file: string): string {
  let size: number;
  try {
    const st = statSync(file);
    if (st.isDirectory()) throw new YamlInputError(['the path is a folder; allowed: a YAML config file']);
    if (!st.isFile()) throw new YamlInputError(['the path is not a regular file; allowed: a YAML config file']);
    size = st.size;
  } catch (err) {
    if (err instanceof YamlInputError) throw err;
    throw new YamlInputError([`cannot read the file (${reason(err)})`]);
  }
  if (size > MAX_CONFIG_BYTES) {
    throw new YamlInputError([
      `the file is ${size.toLocaleString('en-US')} bytes; allowed: at most ${MAX_CONFIG_BYTES.toLocaleString('en-US')} bytes`,
    ]);
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    throw new YamlInputError([`cannot read the file (${reason(err)})`]);
  }
  return textOf(bytes);
}

/** Control characters YAML does not allow in a stream (tab, LF and CR are allowed). */
const CONTROL = /(?![\t\n\r])\p{Cc}/u;

/** UTF-8 text without control characters, or a YamlInputError naming the first bad place. */
function textOf(bytes: Buffer): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new YamlInputError(['the file is not UTF-8 text (a binary file?); allowed: a YAML config file']);
  }
  const at = text.search(CONTROL);
  if (at >= 0) {
    const line = text.slice(0, at).split('\n').length;
    const code = text.charCodeAt(at).toString(16).padStart(4, '0');
    throw new YamlInputError([`line ${line} holds the control character U+${code} (a binary file?); allowed: YAML text`]);
  }
  return text;
}

/** A pair's key as text. */
const keyText = (pair: { key: unknown }) => clip(isScalar(pair.key) ? String(pair.key.value) : String(pair.key), 80);

/** Where a node sits, for messages: `` `a.b` (line 3) ``, or `line 3` at the top level. */
function where(path: readonly unknown[], line: number): string {
  const keys = path.flatMap((p) => (isPair(p) ? [keyText(p)] : []));
  return keys.length > 0 ? `\`${keys.join('.')}\` (line ${line})` : `line ${line}`;
}

/** Tags the core schema resolves (`!!str`, `!!int`, ...); anything else is an unknown tag. */
function knownTags(doc: Document): Set<string> {
  return new Set(doc.schema.tags.map((t) => t.tag));
}

/** A short form of a tag for messages: `!!name` for the YAML namespace. */
const shortTag = (tag: string) => clip(tag.replace(/^tag:yaml\.org,2002:/, '!!'), 80);

/** One line per node with a tag the core schema does not know. */
function unknownTagProblems(doc: Document, lines: LineCounter): string[] {
  const known = knownTags(doc);
  const problems: string[] = [];
  visit(doc, {
    Node(_key, node, path) {
      if (!node.tag || known.has(node.tag)) return;
      problems.push(
        `${where(path, lines.linePos(node.range?.[0] ?? 0).line)}: unknown YAML tag ${shortTag(node.tag)}; allowed: plain values, or the core schema's !!str, !!int, !!float, !!bool, !!null, !!seq, !!map`,
      );
    },
  });
  return problems;
}

/**
 * One line per `__proto__` key: YAML reads it as an own key, but merging the config would set an
 * object's prototype with it instead of a value, so it would vanish without a word.
 */
function prototypeKeyProblems(doc: Document, lines: LineCounter): string[] {
  const problems: string[] = [];
  visit(doc, {
    Pair(_key, pair, path) {
      if (!isScalar(pair.key) || pair.key.value !== '__proto__') return;
      const line = lines.linePos(pair.key.range?.[0] ?? 0).line;
      problems.push(`${where([...path, pair], line)}: \`__proto__\` is not a config key`);
    },
  });
  return problems;
}

/** A key given twice in one mapping, named with its path: the YAML library's message names only the line. */
function duplicateKeyProblem(doc: Document, offset: number, line: number): string {
  let at = `line ${line}`;
  visit(doc, {
    Pair(_key, pair, path) {
      if (!isNode(pair.key) || pair.key.range?.[0] !== offset) return;
      at = where([...path, pair], line);
      return visit.BREAK;
    },
  });
  return `${at}: the key is given twice in the same mapping; allowed: each key once (the second would replace the first unseen)`;
}

/** The deepest key under `node` whose own conversion already exceeds the alias limit. */
function aliasBombPath(doc: Document, node: Node, path: string[]): string[] {
  if (!isCollection(node)) return path;
  for (const [i, item] of node.items.entries()) {
    const child = (isPair(item) ? item.value : item) as Node | null;
    if (!child || typeof child.toJS !== 'function') continue;
    if (isAlias(child)) return path; // the collection holding the alias is where it explodes
    try {
      child.toJS(doc, { maxAliasCount: MAX_ALIAS_COUNT });
    } catch {
      const key = isPair(item) ? keyText(item) : String(i);
      return aliasBombPath(doc, child, [...path, key]);
    }
  }
  return path;
}

/**
 * Parses one YAML document of config text (core schema).
 * @throws YamlInputError for invalid YAML, unknown tags or `__proto__` keys (naming each key), or aliases past MAX_ALIAS_COUNT (naming the key)
 */
export function parseConfigYaml(text: string): unknown {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    const line = lines.linePos(e.pos[0]).line;
    if (e.code === 'DUPLICATE_KEY') throw new YamlInputError([duplicateKeyProblem(doc, e.pos[0], line)]);
    throw new YamlInputError([`not valid YAML: ${clip(e.message, 200)} (line ${line})`]);
  }
  const problems = [...unknownTagProblems(doc, lines), ...prototypeKeyProblems(doc, lines)];
  if (problems.length > 0) throw new YamlInputError(problems);
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    if (!(err instanceof ReferenceError)) throw err;
    const at = isCollection(doc.contents) ? aliasBombPath(doc, doc.contents as Node, []) : [];
    const key = at.length > 0 ? `\`${at.join('.')}\`` : 'the document';
    throw new YamlInputError([
      `${key}: ${err.message.includes('Excessive') ? `its aliases expand past the limit of ${MAX_ALIAS_COUNT} (maxAliasCount; an alias bomb?)` : clip(err.message, 200)}; allowed: aliases that expand to at most ${MAX_ALIAS_COUNT} nodes`,
    ]);
  }
}
