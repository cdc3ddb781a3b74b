"""What GPU telemetry's sampling costs the host: CPU seconds per wall second, per backend.

    python3 tests/perf/bench_telemetry.py [--runs 5] [--seconds 5] [--interval 0.1] [--gpus UUID,...]
                                          [--nvidia-smi PATH] [--backends pynvml,ctypes,nvidia-smi]

For each backend that works here (pynvml, ctypes: a thread in this process; nvidia-smi: a `-lms` subprocess and a
thread parsing its lines), a Telemetry samples the GPUs for --seconds while the main thread only waits; the CPU
time of this process (getrusage RUSAGE_SELF: the sampling thread, the main thread being asleep) plus that of
the reaped nvidia-smi (RUSAGE_CHILDREN) is divided by the wall time. Medians of --runs runs; target: under 1% of
one core. Without a GPU (no --gpus and no NVML), the nvidia-smi backend runs against a stand-in that replays the
H200 capture (tests/fixtures/nvidia-smi/h200-power/samples-lms100.csv): that measures our side, not nvidia-smi's.
"""
import argparse
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
_TREE = tempfile.mkdtemp(prefix='telemetry-ac-')
os.makedirs(os.path.join(_TREE, 'ansible_collections', 'specdec'))
os.symlink(str(REPO), os.path.join(_TREE, 'ansible_collections', 'specdec', 'bench'))
sys.path.insert(0, _TREE)

from ansible_collections.specdec.bench.plugins.module_utils import _telemetry as tel  # noqa: E402  pylint: disable=wrong-import-position

CAPTURE = REPO / 'tests' / 'fixtures' / 'nvidia-smi' / 'h200-power' / 'samples-lms100.csv'
CAPTURE_COLUMNS = ('timestamp', 'index', 'uuid', 'power.draw', 'power.draw.average', 'power.draw.instant', 'power.limit',
                   'enforced.power.limit', 'clocks.sm', 'clocks.mem', 'utilization.gpu', 'utilization.memory',
                   'temperature.gpu', 'memory.used', 'pstate')
STAND_IN = '''#!%s
import sys, time
COLUMNS = %r
rows = [[c.strip() for c in line.split(',')] for line in open(%r) if line.strip()]
args = sys.argv[1:]
fields = next(a.split('=', 1)[1] for a in args if a.startswith('--query-gpu=')).split(',')
every = int(args[args.index('-lms') + 1]) / 1000.0 if '-lms' in args else None
i = 0
while True:
    cells = dict(zip(COLUMNS, rows[i %% len(rows)]))
    now = time.time()
    cells['timestamp'] = time.strftime('%%Y/%%m/%%d %%H:%%M:%%S', time.localtime(now)) + '.%%03d' %% int(now %% 1 * 1000)
    cells['clocks_event_reasons.active'] = '0x0000000000000001'
    print(', '.join(cells[f] for f in fields), flush=True)
    if every is None:
        break
    i += 1
    time.sleep(every)
'''


def cpu_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def one_run(uuids, backend, seconds, interval, nvidia_smi):
    telemetry = tel.Telemetry(uuids, interval_s=interval, nvidia_smi=nvidia_smi, backend=backend)
    telemetry.start()  # the backend's start-up (nvidia-smi's first line) is left out of the window
    own0, children0 = cpu_seconds()
    wall0 = time.monotonic()
    threading.Event().wait(seconds)
    own1, _children = cpu_seconds()
    wall1 = time.monotonic()
    result = telemetry.stop()
    _own, children1 = cpu_seconds()  # the child's CPU shows once it is reaped, in stop()
    wall = wall1 - wall0
    return {'own': (own1 - own0) / wall, 'child': (children1 - children0) / wall,
            'samples_per_s': result['samples'] / result['duration_s']}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--seconds', type=float, default=5.0)
    parser.add_argument('--interval', type=float, default=0.1)
    parser.add_argument('--gpus', help='GPU UUIDs, comma-separated (default: every GPU NVML sees, else the stand-in)')
    parser.add_argument('--nvidia-smi', default='nvidia-smi')
    parser.add_argument('--backends', default='pynvml,ctypes,nvidia-smi')
    args = parser.parse_args()

    uuids = args.gpus.split(',') if args.gpus else None
    nvidia_smi = args.nvidia_smi
    if uuids is None:
        try:
            listed = subprocess.run([nvidia_smi, '--query-gpu=uuid', '--format=csv,noheader'], capture_output=True,
                                    text=True, timeout=30, check=True).stdout
            uuids = [line.strip() for line in listed.splitlines() if line.strip().startswith('GPU-')]
        except (OSError, subprocess.SubprocessError) as error:
            print('no nvidia-smi here (%s): the nvidia-smi backend runs against the stand-in' % error)
            folder = tempfile.mkdtemp(prefix='bench-telemetry-')
            nvidia_smi = os.path.join(folder, 'nvidia-smi')
            with open(nvidia_smi, 'w', encoding='utf-8') as handle:
                handle.write(STAND_IN % (sys.executable, CAPTURE_COLUMNS, str(CAPTURE)))
            os.chmod(nvidia_smi, 0o755)
            uuids = ['GPU-ff5bd000-d5b2-bc39-142e-dcdc7a95938f']
    print('GPUs: %s; %d runs of %.1f s at %.0f ms' % (', '.join(uuids), args.runs, args.seconds, args.interval * 1000))

    rows = []
    for backend in args.backends.split(','):
        runs = []
        try:
            for _run in range(args.runs):
                runs.append(one_run(uuids, backend, args.seconds, args.interval, nvidia_smi))
        except (ValueError, ImportError) as error:
            print('%s: not available (%s)' % (backend, error))
            continue
        own = statistics.median(run['own'] for run in runs)
        child = statistics.median(run['child'] for run in runs)
        total = statistics.median(run['own'] + run['child'] for run in runs)
        rate = statistics.median(run['samples_per_s'] for run in runs)
        rows.append((backend, own, child, total, rate))

    print('\n| backend | this process, % of a core | nvidia-smi, % of a core | total, % of a core | samples/s per GPU |')
    print('| --- | ---: | ---: | ---: | ---: |')
    for backend, own, child, total, rate in rows:
        print('| %s | %.3f | %.3f | %.3f | %.1f |' % (backend, 100 * own, 100 * child, 100 * total, rate))


if __name__ == '__main__':
    main()
