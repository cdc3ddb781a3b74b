// The training monitor's page: live from /api/events (server-sent events), polling /api/status when they fail.
// Log text and every value from the server reach the page through textContent only, never as markup.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const POLL_MS = 2000;
  let pollTimer = null;

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
    text('updated', new Date().toLocaleTimeString());
  }

  function poll() {
    fetch('api/status', { cache: 'no-store' })
      .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
      .then(render)
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
    events.onerror = () => {
      // The browser reconnects by itself; poll meanwhile so the page never freezes.
      if (events.readyState === EventSource.CLOSED) startPolling();
      else text('transport', 'reconnecting');
    };
  }

  start();
}());
