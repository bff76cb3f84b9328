/**
 * A small, safe arithmetic evaluator for Countdown answers (SPEC.md §8: "evaluate the expression with
 * a safe parser, never eval"; RAGEN ragen/env/countdown/env.py uses Python eval, which we replace).
 * Recursive descent over this grammar (whitespace allowed between tokens):
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/') unary)*
 *   unary   := '-' unary | primary
 *   primary := number | '(' expr ')'
 *   number  := digits ('.' digits)?
 * Anything else (letters, '=', '^', '**', unary '+', empty input, unbalanced parentheses) is invalid.
 */

/** Result of `evaluateArithmetic`: the value (IEEE double; x/0 gives ±Infinity or NaN) and the number
 * literals in the order written (unary minus is an operator, so "-3" contributes 3). */
export interface ArithResult {
  value: number;
  numbers: number[];
}

/** Longest accepted expression, in characters; longer input is invalid (bounds recursion depth). */
export const MAX_EXPRESSION_LENGTH = 1000;

const TOKEN = /\s*(\d+(?:\.\d+)?|[-+*/()])/y;

function tokenize(text: string): string[] | null {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const start = TOKEN.lastIndex;
    const m = TOKEN.exec(text);
    if (m === null) return /^\s*$/.test(text.slice(start)) ? tokens : null;
    tokens.push(m[1]);
  }
  return tokens;
}

/**
 * Parses and evaluates an arithmetic expression.
 * @param text e.g. "(5 + 2) * 3 - -1"
 * @returns the value and the number literals, or null when the text is not an expression of the grammar
 *          above (or is longer than MAX_EXPRESSION_LENGTH). Never throws.
 */
export function evaluateArithmetic(text: string): ArithResult | null {
  if (text.length > MAX_EXPRESSION_LENGTH) return null;
  const tokens = tokenize(text);
  if (tokens === null || tokens.length === 0) return null;
  const numbers: number[] = [];
  let pos = 0;
  const peek = (): string | undefined => tokens[pos];

  // Each returns null on a syntax error; errors propagate up unchanged.
  const expr = (): number | null => {
    let left = term();
    while (left !== null && (peek() === '+' || peek() === '-')) {
      const op = tokens[pos++];
      const right = term();
      left = right === null ? null : op === '+' ? left + right : left - right;
    }
    return left;
  };
  const term = (): number | null => {
    let left = unary();
    while (left !== null && (peek() === '*' || peek() === '/')) {
      const op = tokens[pos++];
      const right = unary();
      left = right === null ? null : op === '*' ? left * right : left / right;
    }
    return left;
  };
  const unary = (): number | null => {
    if (peek() !== '-') return primary();
    pos++;
    const v = unary();
    return v === null ? null : -v;
  };
  const primary = (): number | null => {
    const tok = peek();
    if (tok === undefined) return null;
    pos++;
    if (tok === '(') {
      const v = expr();
      if (v === null || tokens[pos++] !== ')') return null;
      return v;
    }
    if (!/^\d/.test(tok)) return null;
    const n = Number(tok);
    numbers.push(n);
    return n;
  };

  const value = expr();
  if (value === null || pos !== tokens.length) return null;
  return { value, numbers };
}
