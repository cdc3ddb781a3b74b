// The training monitor's page: live from /api/events (server-sent events), polling /api/status when they fail.
// Log text and every value from the server reach the page through textContent only, never as markup.
// The latest evaluation (the run folder's evaluation.json) comes as `evaluation` events on the same stream, sent when
// the file changes, or from api/evaluation with each poll.
// Curves: every metric of the log against its step, as inline SVG built here, raw and smoothed (an exponential
// moving average with weight SMOOTHING, debiased as TensorBoard's smoothing is), from the server's index of the
// log's points: `history` events bring the points this page has not seen (its cursor), so a reload gets them all.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const POLL_MS = 2000;
  const SVG = 'http://www.w3.org/2000/svg';
  const SMOOTHING = 0.9;
  const WIDTH = 520, HEIGHT = 170, PAD = { left: 58, right: 10, top: 8, bottom: 22 };
  const SPARK_W = 150, SPARK_H = 34;
  let pollTimer = null;
  const history = { id: null, cursor: 0, series: new Map() };
  let drawQueued = false;

  function svg(name, attributes) {
    const node = document.createElementNS(SVG, name);
    Object.keys(attributes || {}).forEach((key) => node.setAttribute(key, String(attributes[key])));
    return node;
  }

  // --- curves

  function addHistory(data) {
    if (!data || typeof data !== 'object') return;
    if (data.id !== history.id || data.from === 0) {
      if (data.from !== 0) return;  // another log's cursor: wait for its points from the start
      history.id = data.id;
      history.cursor = 0;
      history.series.clear();
    }
    if (data.from !== history.cursor) return;
    Object.keys(data.series || {}).forEach((name) => {
      let series = history.series.get(name);
      if (!series) {
        series = { steps: [], values: [], smooth: [], ema: 0, weight: 0 };
        history.series.set(name, series);
      }
      data.series[name].forEach((point) => {
        const step = Number(point[0]), value = Number(point[1]);
        if (!isFinite(step) || !isFinite(value)) return;
        series.ema = SMOOTHING * series.ema + (1 - SMOOTHING) * value;
        series.weight = SMOOTHING * series.weight + (1 - SMOOTHING);
        series.steps.push(step);
        series.values.push(value);
        series.smooth.push(series.ema / series.weight);
      });
    });
    history.cursor = data.next;
    text('points', history.cursor);
    if (!drawQueued) {
      drawQueued = true;
      requestAnimationFrame(() => { drawQueued = false; drawCharts(); });
    }
  }

  // The indices drawn of n points: all when few, else per pixel column its first, lowest, highest and last point.
  function drawn(steps, values, x) {
    const n = steps.length;
    if (n <= 2 * WIDTH) return Array.from({ length: n }, (_, i) => i);
    const kept = [];
    let column = null, first = 0, low = 0, high = 0;
    const flush = (last) => { new Set([first, low, high, last].sort((a, b) => a - b)).forEach((i) => kept.push(i)); };
    for (let i = 0; i < n; i++) {
      const c = Math.round(x(steps[i]));
      if (c !== column) {
        if (column !== null) flush(i - 1);
        column = c; first = low = high = i;
      } else {
        if (values[i] < values[low]) low = i;
        if (values[i] > values[high]) high = i;
      }
    }
    flush(n - 1);
    return kept;
  }

  function pathOf(indices, steps, values, x, y) {
    return indices.map((i, k) => (k ? 'L' : 'M') + x(steps[i]).toFixed(1) + ' ' + y(values[i]).toFixed(1)).join('');
  }

  function chart(name) {
    const figure = document.createElement('figure');
    figure.className = 'chart';
    figure.dataset.metric = name;
    const caption = document.createElement('figcaption');
    const title = document.createElement('span');
    title.className = 'metric-name';
    title.textContent = name;
    const last = document.createElement('span');
    last.className = 'metric-last';
    caption.append(title, last);
    const plot = svg('svg', { viewBox: '0 0 ' + WIDTH + ' ' + HEIGHT, role: 'img', class: 'plot' });
    plot.append(svg('g', { class: 'axes' }), svg('path', { class: 'raw' }), svg('path', { class: 'smooth' }));
    figure.append(caption, plot);
    return figure;
  }

  function drawCharts() {
    const box = $('charts');
    text('charts-empty', history.series.size ? '' : 'no metric in the log yet');
    $('charts-empty').hidden = history.series.size > 0;
    const figures = new Map(Array.from(box.children).map((node) => [node.dataset.metric, node]));
    Array.from(history.series.keys()).sort((a, b) => (a === 'loss' ? -1 : b === 'loss' ? 1 : a < b ? -1 : 1)).forEach((name) => {
      let figure = figures.get(name);
      if (!figure) { figure = chart(name); box.append(figure); }
      figures.delete(name);
      drawChart(figure, history.series.get(name));
    });
    figures.forEach((figure) => figure.remove());
  }

  function drawChart(figure, series) {
    const steps = series.steps, values = series.values, n = steps.length;
    if (!n) return;
    let low = Infinity, high = -Infinity;
    values.forEach((v) => { if (v < low) low = v; if (v > high) high = v; });
    if (low === high) { low -= Math.abs(low) * 0.05 || 1; high += Math.abs(high) * 0.05 || 1; }
    const first = steps[0], lastStep = steps[n - 1] > first ? steps[n - 1] : first + 1;
    const x = (step) => PAD.left + (step - first) / (lastStep - first) * (WIDTH - PAD.left - PAD.right);
    const y = (value) => PAD.top + (high - value) / (high - low) * (HEIGHT - PAD.top - PAD.bottom);
    const plot = figure.querySelector('svg');
    const indices = drawn(steps, values, x);
    plot.querySelector('.raw').setAttribute('d', pathOf(indices, steps, values, x, y));
    plot.querySelector('.smooth').setAttribute('d', pathOf(indices, steps, series.smooth, x, y));
    const axes = svg('g', { class: 'axes' });
    axes.append(svg('path', { d: 'M' + PAD.left + ' ' + PAD.top + 'V' + (HEIGHT - PAD.bottom) + 'H' + (WIDTH - PAD.right) }));
    [[high, PAD.top + 9, PAD.left - 4, 'end'], [low, HEIGHT - PAD.bottom, PAD.left - 4, 'end'],
      [first, HEIGHT - 6, PAD.left, 'start'], [steps[n - 1], HEIGHT - 6, WIDTH - PAD.right, 'end']].forEach((label, k) => {
      const node = svg('text', { x: label[2], y: label[1], 'text-anchor': label[3] });
      node.textContent = k < 2 ? number(label[0]) : 'step ' + label[0];
      axes.append(node);
    });
    plot.replaceChild(axes, plot.querySelector('.axes'));
    figure.querySelector('.metric-last').textContent = number(values[n - 1]) + ' at step ' + steps[n - 1] +
      ' (smoothed ' + number(series.smooth[n - 1]) + ')';
    figure.dataset.points = String(n);
    figure.dataset.drawn = String(indices.length);
    figure.dataset.lastStep = String(steps[n - 1]);
    figure.dataset.lastValue = String(values[n - 1]);
    figure.dataset.lastX = x(steps[indices[indices.length - 1]]).toFixed(1);
  }

  // --- GPUs

  function sparkline(values, top, className) {
    const finite = values.map((v) => (typeof v === 'number' && isFinite(v) ? v : null));
    const high = Math.max(top || 0, ...finite.filter((v) => v !== null), 1e-9);
    const step = finite.length > 1 ? SPARK_W / (finite.length - 1) : 0;
    const points = [];
    finite.forEach((v, i) => { if (v !== null) points.push((i * step).toFixed(1) + ',' + (SPARK_H - 1 - v / high * (SPARK_H - 2)).toFixed(1)); });
    return svg('polyline', { points: points.join(' '), class: className });
  }

  function renderGpus(gpu) {
    const box = $('gpus');
    const list = (gpu && gpu.gpus) || [];
    text('gpu-note', gpu && gpu.error ? gpu.error : list.length ? (gpu.backend ? 'sampled by ' + gpu.backend + ', ' : '') +
      'idle after ' + gpu.idle_threshold_s + ' s at 0%' : 'no GPU samples yet');
    const tiles = list.map((g) => {
      const tile = document.createElement('div');
      tile.className = 'gpu' + (g.idle ? ' idle' : '');
      tile.dataset.gpu = String(g.index);
      tile.dataset.util = String(g.util);
      tile.dataset.power = String(g.power);
      tile.dataset.idleSeconds = String(g.idle_seconds);
      const head = document.createElement('div');
      head.className = 'gpu-head';
      head.textContent = 'GPU ' + g.index + (g.name ? ' \u00b7 ' + g.name : '');
      const facts = document.createElement('div');
      facts.className = 'gpu-facts';
      const memory = g.mem === null || g.mem === undefined ? '\u2013' :
        (g.mem / 1024).toFixed(1) + (g.mem_total ? ' / ' + (g.mem_total / 1024).toFixed(1) : '') + ' GiB';
      [['util', g.util === null || g.util === undefined ? '\u2013' : g.util + ' %'], ['mem', memory],
        ['power', g.power === null || g.power === undefined ? '\u2013' : Math.round(g.power) + ' W'],
        ['temp', g.temp === null || g.temp === undefined ? '\u2013' : g.temp + ' \u00b0C']].forEach((pair) => {
        const cell = document.createElement('span');
        cell.className = 'gpu-' + pair[0];
        cell.textContent = pair[1];
        facts.append(cell);
      });
      const spark = svg('svg', { viewBox: '0 0 ' + SPARK_W + ' ' + SPARK_H, class: 'spark', preserveAspectRatio: 'none' });
      spark.append(sparkline((g.spark && g.spark.power) || [], 0, 'power'), sparkline((g.spark && g.spark.util) || [], 100, 'util'));
      const idle = document.createElement('div');
      idle.className = 'gpu-idle';
      idle.textContent = g.idle ? 'idle for ' + duration(g.idle_seconds) : '';
      tile.append(head, facts, spark, idle);
      return tile;
    });
    box.replaceChildren(...tiles);
  }

  // --- the latest evaluation (<run>/evaluation.json, written by playbooks/evaluate.yml): untrusted JSON, every value
  // reaches the page as text; fields of the wrong type show as '–'.

  const EVALUATION_ROWS = 200, EVALUATION_SETS = 12;
  const object = (value) => (value && typeof value === 'object' && !Array.isArray(value) ? value : {});
  const finite = (value) => typeof value === 'number' && isFinite(value);
  const words = (value) => (typeof value === 'string' || finite(value) ? String(value) : null);
  const fixed = (value, digits) => (finite(value) ? value.toFixed(digits) : null);

  function speedupText(entry) {
    const speedup = fixed(entry.speedup, 2);
    if (speedup === null) return null;
    const low = fixed(entry.speedup_ci_low, 2), high = fixed(entry.speedup_ci_high, 2);
    return speedup + '\u00d7' + (low !== null && high !== null ? ' [' + low + '\u2013' + high + ']' : '');
  }

  function configOf(entry) {
    return [words(entry.host), finite(entry.tp) ? 'tp' + entry.tp : words(entry.tp), words(entry.method), words(entry.setting)]
      .filter((part) => part !== null).join(' ');
  }

  function cell(row, value, header) {
    const node = document.createElement(header ? 'th' : 'td');
    node.textContent = value === null || value === undefined || value === '' ? '\u2013' : String(value);
    row.append(node);
    return node;
  }

  function evaluationTable(summary, best) {
    const checkpoints = (Array.isArray(summary.checkpoints) ? summary.checkpoints : []).map(object);
    const sets = [];
    checkpoints.forEach((entry) => Object.keys(object(entry.datasets)).forEach((name) => { if (!sets.includes(name)) sets.push(name); }));
    sets.sort();
    const shownSets = sets.slice(0, EVALUATION_SETS);
    const configs = new Set(checkpoints.map(configOf));
    const head = document.createElement('thead');
    const titles = head.insertRow();
    ['step'].concat(configs.size > 1 ? ['config'] : [], shownSets, ['overall']).forEach((title) => cell(titles, title, true));
    const body = document.createElement('tbody');
    const sorted = checkpoints.slice().sort((a, b) => (finite(a.step) ? a.step : Infinity) - (finite(b.step) ? b.step : Infinity));
    sorted.slice(0, EVALUATION_ROWS).forEach((entry) => {
      const row = body.insertRow();
      const isBest = entry.step === best.step && entry.name === best.name && configOf(entry) === configOf(best);
      if (isBest) row.className = 'best';
      row.dataset.step = String(words(entry.step));
      const name = words(entry.name);
      const stepCell = cell(row, words(entry.step));
      if (name !== null) stepCell.setAttribute('title', name);
      if (configs.size > 1) cell(row, configOf(entry)).className = 'config';
      shownSets.forEach((set) => {
        const measured = object(object(entry.datasets)[set]);
        const speedup = fixed(measured.speedup, 2), tau = fixed(measured.tau, 2);
        const shown = (speedup === null ? '\u2013' : speedup + '\u00d7') + ' / ' + (tau === null ? '\u2013' : tau);
        cell(row, speedup === null && tau === null ? null : shown);
      });
      cell(row, finite(entry.overall_speedup) ? entry.overall_speedup.toFixed(2) + '\u00d7' : null);
    });
    const table = $('evaluation-table');
    table.replaceChild(head, table.tHead);
    table.replaceChild(body, table.tBodies[0]);
    const more = [];
    if (sorted.length > EVALUATION_ROWS) more.push((sorted.length - EVALUATION_ROWS) + ' more checkpoints');
    if (sets.length > EVALUATION_SETS) more.push((sets.length - EVALUATION_SETS) + ' more datasets');
    $('evaluation-more').hidden = !more.length;
    $('evaluation-more').textContent = more.length ? more.join(', ') + ' in evaluation.json' : '';
  }

  function renderEvaluation(answer) {
    answer = object(answer);
    const summary = answer.summary && typeof answer.summary === 'object' && !Array.isArray(answer.summary) ? answer.summary : null;
    const panel = $('evaluation');
    panel.dataset.state = summary ? 'present' : answer.error ? 'error' : 'absent';
    $('evaluation-none').hidden = Boolean(summary || answer.error);
    $('evaluation-error').hidden = !answer.error;
    $('evaluation-error').textContent = answer.error ? String(answer.error) : '';
    $('evaluation-body').hidden = !summary;
    $('evaluation-link').hidden = !answer.present;
    if (!summary) {
      $('evaluation-report').textContent = '';
      return;
    }
    const best = object(summary.best);
    text('evaluation-campaign', [words(summary.campaign), words(summary.run) !== null ? 'run ' + words(summary.run) : null]
      .filter((part) => part !== null).join(' \u00b7 '));
    const written = finite(answer.mtime) ? new Date(answer.mtime * 1000).toLocaleString() : null;
    text('evaluation-when', words(summary.generated) || written);
    const step = words(best.step), config = configOf(best);
    // no best: no checkpoint has a speedup (no baseline measured, or every stage failed)
    text('evaluation-best', words(best.name) === null ? 'none (no speedup measured)' : words(best.name) + (step !== null ? ' (step ' + step + ')' : ''));
    text('evaluation-config', config);
    text('evaluation-speedup', speedupText(best) === null ? null : speedupText(best) + (words(best.dataset) ? ' ' + words(best.dataset) : ''));
    text('evaluation-tau', fixed(best.tau, 2));
    evaluationTable(summary, best);
    const report = words(summary.report);
    $('evaluation-report').textContent = report !== null ? '\u00b7 report: ' + report + ' (in the campaign\'s report folder)' : '';
  }

  function pollEvaluation() {
    return fetch('api/evaluation', { cache: 'no-store' })
      .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
      .then(renderEvaluation);
  }

  function text(id, value) {
    const node = $(id);
    const shown = value === null || value === undefined || value === '' ? '\u2013' : String(value);
    if (node.textContent !== shown) node.textContent = shown;
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined || !isFinite(seconds)) return null;
    seconds = Math.max(0, Math.round(seconds));
    const h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
    const mm = String(m).padStart(2, '0'), ss = String(s).padStart(2, '0');
    return h ? h + ':' + mm + ':' + ss : mm + ':' + ss;
  }

  function number(value) {
    if (typeof value !== 'number' || !isFinite(value)) return null;
    if (value !== 0 && (Math.abs(value) < 1e-3 || Math.abs(value) >= 1e6)) return value.toExponential(3);
    return String(Math.round(value * 10000) / 10000);
  }

  function render(status) {
    text('run', status.run);
    document.title = 'Training run ' + status.run + ' \u2013 ' + status.state;
    const state = $('state');
    state.dataset.state = status.state;
    text('state', status.state);
    document.body.dataset.state = status.state;
    const p = status.progress;
    const percent = p && typeof p.percent === 'number' ? p.percent : null;
    $('bar-fill').style.width = (percent === null ? 0 : percent) + '%';
    $('bar').setAttribute('aria-valuenow', percent === null ? '0' : String(percent));
    text('percent', percent === null ? null : percent.toFixed(1) + ' %');
    text('step', p ? p.step + (p.total ? ' / ' + p.total : '') : null);
    text('rate', p && p.rate ? (p.rate >= 1 ? p.rate.toFixed(2) + ' ' + p.rate_unit + '/s' : (1 / p.rate).toFixed(2) + ' s/' + p.rate_unit) : null);
    text('eta', p && status.state === 'running' ? duration(p.eta_seconds) : null);
    text('elapsed', p ? duration(p.elapsed_seconds) : null);
    text('loss', number(status.loss));
    text('epoch', status.epoch);
    const error = $('error');
    error.hidden = !status.last_error;
    text('error', status.last_error);
    const body = document.createElement('tbody');
    Object.keys(status.metrics || {}).sort().forEach((key) => {
      const row = body.insertRow();
      row.insertCell().textContent = key;
      row.insertCell().textContent = number(status.metrics[key]);
    });
    $('metrics').replaceChild(body, $('metrics').tBodies[0]);
    const log = $('log');
    const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    const joined = (status.lines || []).join('\n');
    if (log.textContent !== joined) log.textContent = joined;
    if (atBottom) log.scrollTop = log.scrollHeight;
    text('line-count', status.line_count);
    $('log-link').setAttribute('href', 'files/' + encodeURIComponent(status.log_file));
    $('log-link').textContent = status.log_file;
    text('unit', status.backend === 'supervisor' ? status.unit + ' (supervised)' : status.unit);
    const u = status.unit_state || {};
    text('unit-detail', [u.active_state, u.sub_state, u.result].filter(Boolean).join('/') +
      (u.exit_status !== null && u.exit_status !== undefined ? ', exit ' + u.exit_status : '') +
      (u.error ? ', ' + u.error : ''));
    renderGpus(status.gpu);
    text('updated', new Date().toLocaleTimeString());
  }

  function pollHistory() {
    return fetch('api/history?since=' + history.cursor + (history.id ? '&id=' + encodeURIComponent(history.id) : ''), { cache: 'no-store' })
      .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
      .then((data) => { addHistory(data); if (!data.complete) return pollHistory(); return null; });
  }

  function poll() {
    fetch('api/status', { cache: 'no-store' })
      .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
      .then(render)
      .then(pollEvaluation)
      .then(pollHistory)
      .catch(() => text('transport', 'disconnected, retrying'))
      .finally(() => { pollTimer = setTimeout(poll, POLL_MS); });
  }

  function startPolling() {
    if (pollTimer === null) {
      text('transport', 'polling');
      poll();
    }
  }

  function start() {
    if (!window.EventSource) { startPolling(); return; }
    const events = new EventSource('api/events');
    events.onopen = () => text('transport', 'live');
    events.onmessage = (event) => render(JSON.parse(event.data));
    events.addEventListener('history', (event) => addHistory(JSON.parse(event.data)));
    events.addEventListener('evaluation', (event) => renderEvaluation(JSON.parse(event.data)));
    events.onerror = () => {
      // The browser reconnects by itself; poll meanwhile so the page never freezes.
      if (events.readyState === EventSource.CLOSED) startPolling();
      else text('transport', 'reconnecting');
    };
  }

  start();
}());
