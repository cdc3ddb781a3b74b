"""The telemetry code itself on a real NVIDIA GPU, against NVML's energy counter read directly.

    python3 tests/hardware/telemetry_check.py [--gpu 0] [--scale 1.0]     # $OUT/telemetry_check.md and .json

Made for the `device` tool's H200 (torch and nvidia-ml-py there). A bf16 8192^3 matmul loop runs in phases, as
tests/fixtures/nvidia-smi/h200-power/capture.sh did: idle 3 s, full load 12 s, idle right after the load 3 s,
half load (5 matmuls, then 50 ms asleep) 8 s. Around each phase one Telemetry per available backend (pynvml,
ctypes, nvidia-smi) runs at once, all on the same load, and NVML's counter is read directly just inside their
windows. The table: phase, seconds, counter J, then per backend the J it reports (its method) and the J its
samples integrate to, each with its difference from the counter in %. Before the phases, idle() of each backend.
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
_TREE = tempfile.mkdtemp(prefix='telemetry-ac-')
os.makedirs(os.path.join(_TREE, 'ansible_collections', 'specdec'))
os.symlink(str(REPO), os.path.join(_TREE, 'ansible_collections', 'specdec', 'bench'))
sys.path.insert(0, _TREE)

from ansible_collections.specdec.bench.plugins.module_utils import _telemetry as tel  # noqa: E402  pylint: disable=wrong-import-position

PHASES = (('idle', 3.0, 0), ('full matmul', 12.0, 1), ('idle right after load', 3.0, 0), ('half load', 8.0, 2))


def pct(value, reference):
    if value is None or not reference:
        return 'n/a'
    return '%+.1f%%' % (100.0 * (value / reference - 1))


def available_backends(uuid):
    found = []
    for backend in ('pynvml', 'ctypes', 'nvidia-smi'):
        try:
            probe = tel.Telemetry([uuid], backend=backend)
            probe.start()
            probe.stop()
            found.append(backend)
        except (ValueError, ImportError) as error:
            print('backend %s not available: %s' % (backend, error))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--gpu', type=int, default=0)
    parser.add_argument('--scale', type=float, default=1.0, help='multiply every phase length')
    args = parser.parse_args()
    out = pathlib.Path(os.environ.get('OUT', '/tmp/out'))
    out.mkdir(parents=True, exist_ok=True)

    import pynvml  # pylint: disable=import-outside-toplevel,import-error
    import torch  # pylint: disable=import-outside-toplevel,import-error
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(args.gpu)
    uuid = pynvml.nvmlDeviceGetUUID(handle)
    uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
    driver = pynvml.nvmlSystemGetDriverVersion()
    name = pynvml.nvmlDeviceGetName(handle)
    print('GPU %s %s driver %s' % (name, uuid, driver))
    backends = available_backends(uuid)

    def counter():
        return pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)

    a = torch.randn(8192, 8192, device='cuda:%d' % args.gpu, dtype=torch.bfloat16)
    b = torch.randn_like(a)
    (a @ b).sum().item()
    time.sleep(3.0)  # let the warm-up's power fade before idle

    record = {'gpu': name, 'uuid': uuid, 'driver': driver, 'backends': backends, 'idle': {}, 'phases': []}
    for backend in backends:
        telemetry = tel.Telemetry([uuid], backend=backend)
        e0, t0 = counter(), time.time()
        watts = telemetry.idle(2.0)
        e1, t1 = counter(), time.time()
        telemetry.start()
        telemetry.stop()
        record['idle'][backend] = {'idle_power_w': watts, 'counter_w': (e1 - e0) / 1000.0 / (t1 - t0)}

    for phase, seconds, load in PHASES:
        seconds *= args.scale
        sessions = [(backend, tel.Telemetry([uuid], backend=backend)) for backend in reversed(backends)]
        for _backend, telemetry in sessions:  # nvidia-smi first: its start() waits for its first sample
            telemetry.start()
        e0, t0 = counter(), time.time()
        flops = 0
        while time.time() - t0 < seconds:
            if load == 1:
                for _repeat in range(20):
                    a @ b
                torch.cuda.synchronize()
                flops += 20 * 2 * 8192 ** 3
            elif load == 2:
                for _repeat in range(5):
                    a @ b
                torch.cuda.synchronize()
                flops += 5 * 2 * 8192 ** 3
                time.sleep(0.05)
            else:
                time.sleep(0.05)
        torch.cuda.synchronize()
        e1, t1 = counter(), time.time()
        results = {}
        for backend, telemetry in reversed(sessions):
            results[backend] = telemetry.stop()
        row = {'phase': phase, 'seconds': t1 - t0, 'counter_j': (e1 - e0) / 1000.0, 'tflop': flops / 1e12, 'backends': {}}
        for backend, result in results.items():
            gpu = result['per_gpu'][0]
            row['backends'][backend] = {
                'method': result['method'], 'energy_j': result['energy_j'], 'samples_j': gpu['energy_samples_j'],
                'seconds': result['duration_s'], 'samples': result['samples'], 'power_source': result['power_source'],
                'throttled': result['throttled'], 'sm_util_mean': gpu['sm_util_mean'],
            }
        record['phases'].append(row)
        print(json.dumps(row))

    lines = ['GPU: %s, driver %s; backends: %s' % (name, driver, ', '.join(backends)), '',
             '| phase | seconds | counter J | ' + ' | '.join(
                 '%s J (method) | %s samples J' % (backend, backend) for backend in backends) + ' |',
             '| --- | ---: | ---: | ' + ' | '.join('---: | ---:' for _backend in backends) + ' |']
    for row in record['phases']:
        cells = ['%s' % row['phase'], '%.2f' % row['seconds'], '%.0f' % row['counter_j']]
        for backend in backends:
            figures = row['backends'][backend]
            cells.append('%.0f (%s, %s)' % (figures['energy_j'], figures['method'], pct(figures['energy_j'], row['counter_j'])))
            cells.append('%.0f (%s, %d samples)' % (figures['samples_j'], pct(figures['samples_j'], row['counter_j']), figures['samples']))
        lines.append('| ' + ' | '.join(cells) + ' |')
    lines.append('')
    lines.append('idle() before the phases, W: ' + ', '.join(
        '%s %.1f (counter over the same 2 s: %.1f)' % (backend, item['idle_power_w'], item['counter_w'])
        for backend, item in record['idle'].items()))
    table = '\n'.join(lines)
    print(table)
    (out / 'telemetry_check.md').write_text(table + '\n', encoding='utf-8')
    (out / 'telemetry_check.json').write_text(json.dumps(record, indent=1), encoding='utf-8')


if __name__ == '__main__':
    main()
