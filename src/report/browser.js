/*
 * starpo report: the trajectory browser (inlined by html.ts; vanilla JS, no dependencies, no network).
 * Reads the steps from <script id="trajectory-data"> (groups.ts ShownStep[]), fills the step and group
 * selects, and draws the step's group table and the best and worst group side by side (or one chosen
 * group) as .group > .trajectory > .turn elements. Text goes in through textContent only.
 */
(() => {
  var steps = JSON.parse(document.getElementById('trajectory-data').textContent);
  var stepSelect = document.getElementById('step-select');
  var groupSelect = document.getElementById('group-select');
  var table = document.getElementById('group-table');
  var view = document.getElementById('trajectory-view');
  var BOTH = '__best_and_worst__';

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function num(x) {
    return x === null || x === undefined ? '-' : x.toFixed(3);
  }
  function option(value, label) {
    var o = el('option', '', label);
    o.value = value;
    return o;
  }
  function current() {
    return steps[Number(stepSelect.value)];
  }
  function keptText(kept) {
    return kept === null ? 'no update scores' : kept ? 'kept by the filter' : 'filtered out (not trained on)';
  }
  function successes(g) {
    return `${g.trajectories.filter((t) => t.success).length}/${g.trajectories.length}`;
  }

  function turnElement(turn, i) {
    var e = el('div', 'turn');
    var action =
      turn.action === null ? 'no action (did not parse)' : `action ${turn.action}${turn.actionIsEffective ? '' : ' (no effect)'}`;
    var meta = el('div', 'meta', `turn ${i + 1} · reward ${num(turn.reward)} · ${action}`);
    if (!turn.actionIsValid) meta.classList.add('invalid');
    e.appendChild(meta);
    e.appendChild(el('pre', 'observation', turn.observation));
    e.appendChild(el('pre', 'response', turn.response));
    return e;
  }

  function trajectoryElement(t) {
    var e = el('div', `trajectory${t.success ? ' success' : ''}`);
    e.dataset.trajId = t.trajId;
    var s = t.score || {};
    e.appendChild(
      el(
        'div',
        'scores',
        'env ' +
          t.envId +
          ' · score ' +
          num(t.episodeScore) +
          ' · ' +
          t.outcome +
          ' · normalised ' +
          num(s.normalizedScore) +
          ' · advantage ' +
          num(s.advantage),
      ),
    );
    t.turns.forEach((turn, i) => {
      e.appendChild(turnElement(turn, i));
    });
    return e;
  }

  function groupElement(g, label, className) {
    var e = el('div', `group ${className}`);
    e.dataset.group = g.id;
    e.appendChild(el('h3', '', `${label} ${g.id}`));
    e.appendChild(
      el('div', 'note', `tag ${g.tag} · seed ${g.seed} · mean score ${num(g.meanScore)} · success ${successes(g)} · ${keptText(g.kept)}`),
    );
    g.trajectories.forEach((t) => {
      e.appendChild(trajectoryElement(t));
    });
    return e;
  }

  function drawTable(s) {
    var t = el('table', 'groups');
    var head = el('tr');
    ['group', 'tag', 'seed', 'mean score', 'success', 'filter'].forEach((h) => {
      head.appendChild(el('th', '', h));
    });
    t.appendChild(head);
    s.groups.forEach((g) => {
      var row = el('tr', g.id === s.best ? 'best' : g.id === s.worst ? 'worst' : '');
      [g.id, g.tag, String(g.seed), num(g.meanScore), successes(g), g.kept === null ? '-' : g.kept ? 'kept' : 'dropped'].forEach((v) => {
        row.appendChild(el('td', '', v));
      });
      row.addEventListener('click', () => {
        groupSelect.value = g.id;
        drawView();
      });
      t.appendChild(row);
    });
    table.replaceChildren(t);
    if (s.skipReason) table.appendChild(el('p', 'alert', `update skipped: ${s.skipReason}`));
  }

  function drawView() {
    var s = current();
    var find = (id) => s.groups.filter((g) => g.id === id)[0];
    var box = el('div', 'best-worst');
    if (groupSelect.value !== BOTH) box.appendChild(groupElement(find(groupSelect.value), 'group', 'chosen'));
    else if (s.best === s.worst) box.appendChild(groupElement(find(s.best), 'best and worst group', 'best worst'));
    else {
      box.appendChild(groupElement(find(s.best), 'best group', 'best'));
      box.appendChild(groupElement(find(s.worst), 'worst group', 'worst'));
    }
    view.replaceChildren(box);
  }

  function drawStep() {
    var s = current();
    groupSelect.replaceChildren(option(BOTH, 'best and worst'));
    s.groups.forEach((g) => {
      groupSelect.appendChild(option(g.id, g.id));
    });
    drawTable(s);
    drawView();
  }

  if (steps.length === 0) {
    view.appendChild(el('p', 'empty', 'no train rollouts stored for this run'));
    return;
  }
  steps.forEach((s, i) => {
    stepSelect.appendChild(option(String(i), `step ${s.step}`));
  });
  stepSelect.value = String(steps.length - 1);
  stepSelect.addEventListener('change', drawStep);
  groupSelect.addEventListener('change', drawView);
  drawStep();
})();
