import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { initTestBackend } from '../../helpers/backend';
import { type SameNumbers, sameNumbers } from '../../helpers/same_numbers';

let backend = '';
before(async () => {
  backend = await initTestBackend();
});

function assertClose(actual: number[][], expected: number[][], what: string): void {
  assert.equal(actual.length, expected.length, `${what}: rows`);
  actual.forEach((row, i) =>
    row.forEach((x, j) => assert.ok(Math.abs(x - expected[i][j]) <= 1e-5, `${what}[${i}][${j}] = ${x}, reference ${expected[i][j]}`)),
  );
}

test('sampled tokens are identical and log-probs within 1e-5 of the reference commit (generation, scoring, one update)', async () => {
  const ref = JSON.parse(readFileSync(join(__dirname, `../../fixtures/same_numbers/${backend}.json`), 'utf8')) as SameNumbers;
  const now = await sameNumbers(join(__dirname, '../../../configs/frozen_lake_solver.yaml'));
  now.turns.forEach((turn, k) => {
    assert.deepEqual(turn.tokens, ref.turns[k].tokens, `turn ${k} tokens`);
    assertClose(turn.logprobs, ref.turns[k].logprobs, `turn ${k} logprobs`);
  });
  assertClose(now.logprobsBefore, ref.logprobsBefore, 'logprobs before the update');
  assert.ok(Math.abs(now.gradNorm - ref.gradNorm) <= 1e-5 * ref.gradNorm, `grad norm ${now.gradNorm}, reference ${ref.gradNorm}`);
  assertClose(now.logprobsAfter, ref.logprobsAfter, 'logprobs after the update');
});
