"""What one /api/status costs the training monitor as the log grows, against re-reading the whole log each time.

    .venv/bin/python tests/perf/bench_train_monitor.py [--runs 20] [--sizes 1,10,50]

For each log size (MB of the simulated trainer's output: tqdm bars and JSON lines), in the same run:
  reread        parse the whole log for every request (what a monitor without state would do)
  incremental   the monitor's way (roles/train_monitor/files/specdec_train_monitor.py, Monitor.status): read only
                what was appended since the last request
Between two requests the trainer appends one step (a bar and a JSON line), as a live run does. The unit state comes
from a stand-in systemctl (a shell script), the same in both variants. Medians of --runs requests, ms; the ratio is
reread over incremental. The first request of the monitor (reading at most the last 2 MiB) is shown apart.
"""
import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "roles" / "train_monitor" / "files"))
sys.path.insert(0, str(REPO / "plugins" / "module_utils"))

import _train_log  # noqa: E402  pylint: disable=wrong-import-position,import-error
import specdec_train_monitor  # noqa: E402  pylint: disable=wrong-import-position,import-error


def step_text(step, total):
    drawn = "\r\rEpoch 0:  %3d%%|%-20s| %d/%d [01:02<03:04,  5.00it/s, loss=2.3456]" % (
        100 * step // total, "#" * (20 * step // total), step, total)
    return drawn + '\r\n{"step": %d, "total_steps": %d, "epoch": 0, "loss": 2.3456, "lr": 0.0003, "time": %d}\n' % (
        step, total, 1764680000 + step)


def write_log(path, megabytes, total):
    step = 0
    with open(path, "w", encoding="utf-8") as handle:
        while handle.tell() < megabytes * 1024 * 1024:
            step += 1
            handle.write(step_text(step, total))
    return step


def median_ms(samples):
    return statistics.median(samples) * 1000


def measure(size, runs, workdir, systemctl):
    run_dir = os.path.join(workdir, "run-%d" % size)
    os.makedirs(run_dir)
    log = os.path.join(run_dir, "train.log")
    total = 10_000_000
    step = write_log(log, size, total)
    monitor = specdec_train_monitor.Monitor(run_dir, "x.service", "bench", systemctl=systemctl, unit_ttl=0)
    started = time.perf_counter()
    monitor.status()
    first = time.perf_counter() - started
    reread, incremental = [], []
    for _request in range(runs):
        step += 1
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(step_text(step, total))
        started = time.perf_counter()
        status = monitor.status()
        incremental.append(time.perf_counter() - started)
        assert status["progress"]["step"] == step
        started = time.perf_counter()
        with open(log, "rb") as handle:
            whole = _train_log.read_status(handle.read())
        props = specdec_train_monitor.parse_show(os.popen(systemctl).read())
        specdec_train_monitor.unit_state(props)
        reread.append(time.perf_counter() - started)
        assert whole["progress"]["step"] == step
    return first, median_ms(reread), median_ms(incremental)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sizes", default="1,10,50", help="log sizes in MB")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-train-monitor-")
    try:
        systemctl = os.path.join(workdir, "systemctl")
        with open(systemctl, "w", encoding="utf-8") as handle:
            handle.write("#!/bin/sh\nprintf 'LoadState=loaded\\nActiveState=active\\n'\n")
        os.chmod(systemctl, 0o755)
        print("| log | first request ms | reread median ms | incremental median ms | reread / incremental |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for size in (int(value) for value in args.sizes.split(",")):
            first, reread, incremental = measure(size, args.runs, workdir, systemctl)
            print("| %d MB | %.1f | %.1f | %.2f | %.0fx |" % (size, first * 1000, reread, incremental,
                                                              reread / incremental))
    finally:
        shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
