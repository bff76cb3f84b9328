/**
 * `starpo trajectories` output (src/report/text.ts over groups.ts) for a FrozenLake step whose records
 * come from the real rollout pool and env: one group played by the BFS solver (succeeds), one that
 * answers an invalid action every turn (runs to the turn cap). The grids and responses appear turn by
 * turn, best and worst side by side on a wide terminal and one after the other on a narrow one.
 */

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { trajectoryScores } from '../../../src/algo/trajectory_scores';
import type { Trajectory } from '../../../src/contract';
import { customEnvSchema } from '../../../src/contract';
import { charTokenizer } from '../../../src/model/tokenizer';
import { groupStep } from '../../../src/report/groups';
import { formatStep } from '../../../src/report/text';
import { solverPolicy } from '../../../src/rollout/demonstrations';
import { runGroups } from '../../../src/rollout/manager';
import { rolloutGroup } from '../../../src/rollout/plan';
import type { Policy } from '../../../src/rollout/policy';
import { deriveSeed } from '../../../src/util/rng';

const tokenizer = charTokenizer();
const customEnvs = {
  FrozenLake: customEnvSchema.parse({
    env_type: 'frozen_lake',
    max_steps: 5,
    max_tokens_per_step: 24,
    agent_system_template: '',
    agent_template: '{observation}',
    env_config: { size: 4, p: 0.8, is_slippery: false, format_penalty: -0.01 },
  }),
};
/** Answers an action FrozenLake does not have. */
const jump: Policy = {
  async generate(req) {
    const tokens = req.contexts.map((_, i) => tokenizer.encode('<answer>Jump</answer><|im_end|>').slice(0, req.maxNewTokens[i]));
    return { tokens, logprobs: tokens.map((t) => t.map(() => 0)) };
  },
};

let trajectories: Trajectory[] = [];
before(async () => {
  const play = async (groupId: number, policy: Policy) =>
    (
      await runGroups([rolloutGroup('FrozenLake', groupId, 0, deriveSeed(7, 'train', 3, groupId), [7, 'train', 3])], {
        policy,
        tokenizer,
        customEnvs,
        sequenceLength: 768,
        maxNewTokens: 24,
        split: 'train',
        step: 3,
        groupSize: 2,
        redundancy: 0,
      })
    ).trajectories;
  trajectories = [...(await play(0, jump)), ...(await play(1, solverPolicy(tokenizer)))];
});

/** Scores as the update stores them: the solver group +1, the jump group -1 (one token each). */
function scores() {
  const keep = trajectories.map((_, i) => i);
  const values = trajectories.map((t) => (t.success ? 1 : -1));
  return trajectoryScores({
    step: 3,
    trajIds: trajectories.map((t) => t.trajId),
    keep,
    normalizedScores: values,
    advantages: values.map((v) => [v / 2]),
    mask: values.map(() => [1]),
  });
}

test('the records are a real FrozenLake step: the solver group succeeds, the jump group runs to the cap', () => {
  const [jumper, solver] = [trajectories[0], trajectories[2]];
  assert.equal(trajectories.length, 4);
  assert.ok(solver.success && solver.turns.every((t) => t.actionIsValid));
  assert.ok(!jumper.success && jumper.truncated && jumper.turns.length === 5 && jumper.turns.every((t) => t.action === null));
  assert.match(solver.turns[0].observation, /P/);
});

test("wide terminal: the group table, then best and worst side by side with every turn's grid and response", () => {
  const shown = groupStep(3, trajectories, scores());
  const [worstId, bestId] = [trajectories[0].trajGroupId, trajectories[2].trajGroupId];
  assert.equal(shown.best, bestId);
  assert.equal(shown.worst, worstId);
  const text = formatStep(shown, { header: 'run r · step 3 · train', width: 160 });
  const lines = text.split('\n');
  assert.equal(lines[0], 'run r · step 3 · train');
  assert.ok(
    lines.some((l) => l.startsWith(bestId) && l.endsWith('kept  (best)')),
    text,
  );
  assert.ok(
    lines.some((l) => l.startsWith(worstId) && l.endsWith('kept  (worst)')),
    text,
  );
  const title = lines.find((l) => l.includes('best group')) as string;
  assert.match(title, new RegExp(`^best group ${bestId} .* │ worst group ${worstId} `));

  // the left column, read back, holds the best group turn by turn: header, grid rows, response
  const column = Math.floor((160 - 3) / 2);
  const left = lines.slice(lines.indexOf(title)).map((l) => l.slice(0, column).trimEnd());
  const solver = trajectories[2];
  let at = left.indexOf(`── env ${solver.envId} · episode score ${solver.episodeScore.toFixed(3)} · success`);
  assert.ok(at > 0, left.join('\n'));
  assert.equal(left[at + 1], '   normalised score 1.000 · advantage 0.500');
  solver.turns.forEach((turn, i) => {
    at = left.indexOf(`turn ${i + 1} · reward ${turn.reward.toFixed(3)} · action ${turn.action}`, at);
    assert.ok(at > 0, `turn ${i + 1} of the best group`);
    assert.deepEqual(
      left.slice(at + 1, at + 5),
      turn.observation.split('\n').map((row) => `  ${row}`),
      'the 4x4 grid',
    );
    assert.equal(left[at + 5], `  response: ${JSON.stringify(turn.response)}`);
    assert.match(turn.response, /^<answer>(Left|Down|Right|Up)<\/answer><\|im_end\|>$/);
  });
  // and the right column the worst group's unparsed answers
  const right = lines.slice(lines.indexOf(title)).map((l) => l.slice(column + 3));
  assert.equal(right.filter((l) => l === 'turn 1 · reward -0.010 · no action (did not parse)').length, 2);
  assert.equal(right.filter((l) => l === '  response: "<answer>Jump</answer><|im_end|>"').length, 10);
});

test('narrow terminal: best group first, then the worst; --group shows one group; no scores shows "-"', () => {
  const shown = groupStep(3, trajectories, scores());
  const text = formatStep(shown, { header: 'h', width: 80 });
  assert.ok(!text.includes(' │ '));
  assert.ok(text.split('\n').every((l) => [...l].length <= 80));
  assert.ok(text.indexOf(`best group ${shown.best}`) < text.indexOf(`worst group ${shown.worst}`));
  const one = formatStep(shown, { header: 'h', width: 80, group: shown.worst });
  assert.match(one, new RegExp(`^group ${shown.worst} `, 'm'));
  assert.ok(!one.includes(shown.best));
  const unscored = formatStep(groupStep(3, trajectories, null), { header: 'h', width: 80 });
  assert.match(unscored, /normalised score - · advantage -/);
  assert.match(unscored, /no update scores/);
});
