/**
 * `starpo report` and `starpo trajectories` on a short real run (Temporal + S3, the tiny FrozenLake
 * fixture): the report opens in headless Chromium (Debian's `chromium`, driven by playwright-core),
 * shows the success and entropy charts and the trajectories of a step with their turns, and makes no
 * request besides its own file; a screenshot is saved in a temp folder (its path is printed).
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type BrowserContext, chromium } from 'playwright-core';
import { endpointsToEnv } from '../../infra/env';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();
const out = mkdtempSync(join(tmpdir(), 'starpo-report-'));
const runId = `it-report-${Date.now()}`;
let browser: BrowserContext | undefined;

/** `starpo <args>` against the test servers. */
function starpo(...args: string[]) {
  const r = spawnSync(process.execPath, ['bin/starpo.js', ...args], {
    env: { ...process.env, ...endpointsToEnv(stack.servers.endpoints) },
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let trained: Promise<void> | undefined;
/** Trains the 2-step run once (inside the first test that needs it, after the stack is up). */
function trainedRun(): Promise<void> {
  trained ??= (async () => {
    const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', runId);
    const handle = await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: runId, args: [input] });
    const result: StarpoRunResult = await handle.result();
    assert.equal(result.steps, 2);
  })();
  return trained;
}
after(async () => {
  await browser?.close();
  // the screenshot stays for a person to look at (path printed by the test); the rest goes
  rmSync(join(out, 'chromium-profile'), { recursive: true, force: true });
});

test('the report opens offline in Chromium: success and entropy charts, trajectories with turns, no request', async (t) => {
  await trainedRun();
  const file = join(out, 'new-folder', 'report.html'); // missing folders are created
  const made = starpo('report', runId, '-o', file);
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, new RegExp(`wrote ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(\\d+ KiB\\)`));
  const html = readFileSync(file, 'utf8');
  assert.ok(html.includes('<tr><th>state</th><td>COMPLETED after 2 steps</td></tr>'), 'the run state from Temporal');
  assert.ok(html.includes('grid symbols: FrozenLake: P player, _ frozen, O hole, G goal'), 'the grid legend');

  browser = await chromium.launchPersistentContext(join(out, 'chromium-profile'), {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = await browser.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`file://${file}`);

  for (const chart of ['success', 'entropy']) {
    assert.equal(await page.locator(`[data-chart="${chart}"] svg`).count(), 1, `${chart} chart drawn`);
  }
  assert.match(await page.locator('[data-chart="success"] svg').innerHTML(), /<path/);
  assert.equal(await page.locator('[data-section="validation"] tr[data-step]').count(), 2, 'evaluations at steps 0 and 2');

  // the browser opens on the last train step (1): its best and worst groups, turn by turn
  assert.equal(await page.locator('#step-select').inputValue(), '1');
  const trajectory = page.locator('.group .trajectory').first();
  await trajectory.waitFor();
  assert.match(
    await trajectory.locator('.scores').innerText(),
    /^env \d+ · score -?\d\.\d{3} · (success|failed|truncated( by the turn cap| by sequence_length)?) · normalised -?\d\.\d{3} · advantage -?\d\.\d{3}$/,
    'scores recorded by the update',
  );
  const turns = trajectory.locator('.turn');
  assert.ok((await turns.count()) >= 1);
  assert.match(await turns.first().locator('.meta').innerText(), /^turn 1 · reward -?\d\.\d{3} · /);
  assert.match(await turns.first().locator('pre.observation').innerText(), /^[_PGO]{4}(\n[_PGO]{4}){3}$/, 'a 4x4 FrozenLake grid');
  assert.equal(await page.locator('.best-worst > .group').count(), 2, 'best and worst side by side');

  // another step and one chosen group
  await page.selectOption('#step-select', '0');
  const groups = await page.locator('#group-table tr').count();
  assert.equal(groups, 1 + 4, 'header + the 4 train groups of step 0');
  await page.locator('#group-table tr').nth(2).click();
  assert.equal(await page.locator('.best-worst > .group').count(), 1);

  const shot = join(out, 'report.png');
  await page.selectOption('#step-select', '1');
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(statSync(shot).size > 10_000);
  t.diagnostic(`screenshot: ${shot}`);
  assert.deepEqual(errors, []);
  assert.deepEqual(requests, [`file://${file}`], 'no request left the page');
});

test("starpo trajectories prints a step's grids turn by turn; a step, tag or group the run lacks exits 2 naming the available ones", async () => {
  await trainedRun();
  const shown = starpo('trajectories', runId, '--step', '1', '--width', '160');
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`^run ${runId} · step 1 · train · 4 groups, 16 trajectories$`, 'm'));
  assert.match(shown.stdout, /^grid symbols: FrozenLake: P player, _ frozen, O hole, G goal, X player in a hole, √ player on the goal$/m);
  assert.match(shown.stdout, /^turn 1 · reward -?\d\.\d{3} · .* │ turn 1 · reward/m);
  assert.match(shown.stdout, /^ {2}[_PGO]{4} +│ {3}[_PGO]{4}$/m, 'grid rows side by side');
  assert.match(shown.stdout, /^ {2}response: ".*" +│ {3}response: /m);

  const badStep = starpo('trajectories', runId, '--step', '7');
  assert.equal(badStep.code, 2);
  assert.match(badStep.stderr, /--step 7: run .* has no train rollouts at step 7; available steps: 0-1/);
  const badTag = starpo('trajectories', runId, '--step', '1', '--tag', 'Sokoban');
  assert.equal(badTag.code, 2);
  assert.match(badTag.stderr, /--tag "Sokoban": .*available tags: FrozenLake/);
  const badGroup = starpo('trajectories', runId, '--step', '0', '--group', '9');
  assert.equal(badGroup.code, 2);
  assert.match(badGroup.stderr, /--group "9": .*available groups: 0 \(FrozenLake_0_0_\d+\), 1 /);
  const unknown = starpo('report', 'no-such-run');
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /run "no-such-run" not found/);
});
