"""What one /api/status costs the training monitor as the log grows, against re-reading the whole log each time.

    .venv/bin/python tests/perf/bench_train_monitor.py [--runs 20] [--sizes 1,10,50]

For each log size (MB of the simulated trainer's output: tqdm bars and JSON lines), in the same run:
  reread        parse the whole log for every request (what a monitor without state would do)
  incremental   the monitor's way (roles/train_monitor/files/specdec_monitor/status.py, Monitor.status): read only
                what was appended since the last request
Between two requests the trainer appends one step (a bar and a JSON line), as a live run does. The unit state comes
from a stand-in systemctl (a shell script), the same in both variants. Medians of --runs requests, ms; the ratio is
reread over incremental. The first request of the monitor (reading at most the last 2 MiB) is shown apart.

With the curves and GPU tiles: "before" is the status alone (Monitor.status, as before), "after" what the
page costs now, in the same run: a status with the GPU tiles (a GpuWatch holding a full sparkline of samples of 4
GPUs, as sampled) and the curves' points not sent yet (Monitor.history from the page's cursor, as one event does).
First request after: the status and the first history answer (at most 1 MiB more of the log indexed). The whole
history (the index built by the first client, INDEX_READ_BYTES per answer; served again from the index to a second
client) is shown apart: it is a once-per-log cost, shared by every client.
"""
import argparse
import collections
import json
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
import specdec_monitor as specdec_train_monitor  # noqa: E402  pylint: disable=wrong-import-position,import-error


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


def with_gpus(monitor):
    """The monitor with a GPU watch holding a full sparkline of samples of 4 GPUs (no sampling thread)."""
    watch = specdec_train_monitor.GpuWatch(monitor.run_dir, ["0", "1", "2", "3"])
    watch.gpus = [{"index": str(i), "uuid": "GPU-%d" % i, "name": "A100", "mem_total": 40960.0} for i in range(4)]
    now = time.time()
    for second in range(specdec_train_monitor.GPU_SPARK_SAMPLES):
        for gpu in range(4):
            record = {"t": now - 120 + second, "gpu": str(gpu), "util": 87, "mem": 30000, "power": 312.5, "temp": 61}
            watch.recent.setdefault(str(gpu), collections.deque(
                maxlen=specdec_train_monitor.GPU_SPARK_SAMPLES)).append(record)
    monitor.gpu_watch = watch
    return monitor


def measure(size, runs, workdir, systemctl):
    run_dir = os.path.join(workdir, "run-%d" % size)
    os.makedirs(run_dir)
    log = os.path.join(run_dir, "train.log")
    total = 10_000_000
    step = write_log(log, size, total)
    monitor = specdec_train_monitor.Monitor(run_dir, "x.service", "bench", systemctl=systemctl, unit_ttl=0)
    after = with_gpus(specdec_train_monitor.Monitor(run_dir, "x.service", "bench", systemctl=systemctl, unit_ttl=0))
    started = time.perf_counter()
    monitor.status()
    first = time.perf_counter() - started
    started = time.perf_counter()
    json.dumps(after.status())
    answer = after.history(0)
    json.dumps(answer)
    first_after = time.perf_counter() - started
    started = time.perf_counter()
    while not answer["complete"]:
        answer = after.history(answer["next"], answer["id"])
        json.dumps(answer)
    whole_history = time.perf_counter() - started + first_after
    cursor = answer["next"]
    started = time.perf_counter()
    again = {"next": 0, "id": None, "complete": False}
    while not again["complete"]:
        again = after.history(again["next"], again["id"])
        json.dumps(again)
    whole_again = time.perf_counter() - started
    assert again["next"] == cursor
    reread, incremental, incremental_after = [], [], []
    for _request in range(runs):
        step += 1
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(step_text(step, total))
        started = time.perf_counter()
        status = monitor.status()
        incremental.append(time.perf_counter() - started)
        assert status["progress"]["step"] == step
        started = time.perf_counter()
        status = after.status()
        json.dumps(status)
        answer = after.history(cursor, answer["id"])
        json.dumps(answer)
        incremental_after.append(time.perf_counter() - started)
        assert status["progress"]["step"] == step and len(status["gpu"]["gpus"]) == 4
        assert answer["series"]["loss"][-1][0] == step, answer["series"]
        cursor = answer["next"]
        started = time.perf_counter()
        with open(log, "rb") as handle:
            whole = _train_log.read_status(handle.read())
        props = specdec_train_monitor.parse_show(os.popen(systemctl).read())
        specdec_train_monitor.unit_state(props)
        reread.append(time.perf_counter() - started)
        assert whole["progress"]["step"] == step
    return {"first": first * 1000, "first_after": first_after * 1000, "whole": whole_history * 1000,
            "whole_again": whole_again * 1000, "points": cursor, "reread": median_ms(reread),
            "incremental": median_ms(incremental), "incremental_after": median_ms(incremental_after)}


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
        print("| log | first request before | first request after | incremental before | incremental after |"
              " whole log per request | whole history (first client) | whole history (another client) | points |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for size in (int(value) for value in args.sizes.split(",")):
            m = measure(size, args.runs, workdir, systemctl)
            print("| %d MB | %.1f | %.1f | %.2f | %.2f | %.1f | %.0f | %.0f | %d |" % (
                size, m["first"], m["first_after"], m["incremental"], m["incremental_after"], m["reread"], m["whole"],
                m["whole_again"], m["points"]))
    finally:
        shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
