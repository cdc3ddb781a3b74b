# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The live monitoring page of one training run: a read-only web service (Python 3.9+ standard library only).

    python3 specdec_train_monitor.py --run-dir /root/train_runs/NAME --unit specdec-train-NAME.service \
        [--backend supervisor --state-dir /var/lib/specdec/services]

GET /                 the page: run name and state, progress bar, rate, ETA, loss and metrics, last log lines,
                      updated live from /api/events (server-sent events), polling /api/status when that fails
GET /api/status       the same as JSON
GET /api/events       a server-sent event with the status whenever it changes, and `history` events with the metric
                      points the page has not seen (?since=CURSOR, or the Last-Event-ID the browser sends back)
GET /api/history      ?since=CURSOR: the metric points after the first CURSOR of the log's index, as JSON
GET /files/           the run folder's files the page uses (the log, the evaluation, the GPU samples) as JSON;
                      GET /files/NAME one of them as text. Nothing else of the run folder is served (SERVED_FILES)
GET /api/evaluation   the latest evaluation of the run's checkpoints, <run-dir>/evaluation.json (playbooks/evaluate.yml
                      copies it there): {present, error, summary (the parsed JSON, or null), mtime, bytes}; the stream of
                      /api/events carries it as an `evaluation` event whenever it changes
GET /evaluation.json  that file as it is (application/json), the page's link to it
Anything else is 404; any other method (TRACE, PROPFIND, CONNECT, ... included) 405 with `Allow: GET, HEAD` and
the same security headers. Only the run folder's files the page needs are served, by name (an allow-list: the
log, evaluation.json, monitor-gpus.jsonl), each a top-level regular file that is not executable (no path traversal, no
symlinks out): the service runs as root to read a root-only run folder, and any local user can reach its port, so
run.sh, the trainer's scripts, a secrets or env file and anything else there stay unread. Requests whose Host is not
a loopback name (DNS rebinding) are refused, and the page's
Content-Security-Policy allows only its own script and style: log text reaches the page as text, never as markup.

The program is this file and the package beside it, specdec_monitor: gpus (the run's GPUs), evaluation (the
evaluation file), status (the run's status from its log and its unit) and server (the HTTP server and the command
line). They import the collection's modules that train_monitor_install writes into this folder as plain modules: the
log parser _train_log.py, the supervisor's state reader _supervisor.py, and the GPU readers _telemetry.py with the
_nvml.py and _nvidia_smi.py it imports (from the collection's package where that is importable, else beside it).
Nothing is put in sys.modules by hand.

Progress is read from the log by _train_log. The run's state comes from systemd (`systemctl show`), or, where PID 1
is not systemd, from the run's folder of specdec's supervisor (<state-dir>/<unit>/: run.json, exit.json), read by
_supervisor; the page shows the same states either way.

The work per request is bounded: one request at a time refreshes the status (the unit, then at most READ_LIMIT_BYTES
of what the log gained, from where the last refresh stopped; a bigger burst is skipped to its last part, the tail
showing the gap); a request that comes meanwhile answers at once with the last status instead of waiting for it.

The curves come from an index of the whole log's metric points (_train_log.MetricIndex), kept once for all clients
and appended as the log grows: each /api/history or event reads at most INDEX_READ_BYTES more of the log, and the
page asks again until it has caught up. The GPUs of the run (CUDA_VISIBLE_DEVICES of its unit or supervisor
definition, or --gpu) are sampled every second by _telemetry's readers (NVML, else nvidia-smi); the samples are
appended to GPU_HISTORY in the run folder (bounded to GPU_HISTORY_BYTES), so a restarted monitor shows them again.

The evaluation file is untrusted input: it is read again only when its inode, size or mtime changed (one lstat per
check), at most EVALUATION_BYTES of it, never through a symlink; a missing file is "no evaluation yet", a bad one
(too big, not UTF-8, not JSON, not an object, a field of the wrong type) an error string the page shows, never a 500.
"""

from __future__ import annotations

import sys

from specdec_monitor.server import main  # pylint: disable=import-error

if __name__ == '__main__':
    sys.exit(main())
