"""Board power of the simulated GPUs (Python 3.9+, standard library only): one model, read by the fake
nvidia-smi and the fake pynvml, written by what loads the GPUs (the SGLang emulator, the trainer).

Model, per GPU
    instant power  P(t) = idle + (peak - idle) * load(t), load in [0, 1]
                   idle: the layout's "power.draw" (the figure an idle GPU reads), peak: the layout's extra key
                   "power.peak" (default PEAK_SHARE of "enforced.power.limit" or "power.limit")
    power.draw     the mean of P over the last second (Ampere and newer average it; it lags every load step)
    energy counter mJ since "driver load": idle * (t - boot) + (peak - idle) * (load-seconds up to t), where boot
                   is the host's boot time (/proc/stat btime) or, without one, the layout file's mtime

State ($SIM_GPU_STATE_DIR/power/<GPU uuid, or index>.json; written only by loaders, never by readers)
    {"version": 1,
     "load_s": 12.5,                        load-seconds of the segments compacted away (all in the past)
     "segments": [[start, end, load], ...], epoch seconds, end > start, not overlapping, in order
     "owners": {"<pid>.<rank>": [load, expires], ...}}
    A loader states "my load is L until `expires`" (a lease, renewed while it stays busy). Under the lock
    ($SIM_GPU_STATE_DIR/power/.lock, flock) it rewrites only the future: segments are cut at the write time w
    and rebuilt from the live owners (sum of their loads, at most 1, until each lease ends). So the load before
    any write never changes and the counter never goes backwards, also when an owner dies (its lease ends) or
    restarts. Readers take the lock shared and their clock inside it.
"""

import fcntl
import json
import os
import time
from collections import namedtuple

DEFAULT_STATE_DIR = "/run/sim-gpu"
STATE_VERSION = 1
PEAK_SHARE = 0.97          # of the power limit, what a saturating load (the H200's matmul: 685 of 700 W) draws
AVERAGE_WINDOW_S = 1.0     # power.draw / nvmlDeviceGetPowerUsage average over this
KEEP_S = 5.0               # segments older than this are compacted into load_s
LEASE_S = 2.0              # a loader's load lasts this long unless renewed

Reading = namedtuple("Reading", "instant_w average_w energy_mj load")


# --------------------------------------------------------------------------------------------
# The load function of one GPU (pure)
# --------------------------------------------------------------------------------------------

def empty_state():
    return {"version": STATE_VERSION, "load_s": 0.0, "segments": [], "owners": {}}


def load_at(state, t):
    """The load at time t (0 outside every segment)."""
    return sum(load for start, end, load in state["segments"] if start <= t < end)


def load_seconds(state, t):
    """The integral of the load from the beginning up to t."""
    total = state["load_s"]
    for start, end, load in state["segments"]:
        if start < t:
            total += (min(end, t) - start) * load
    return total


def rebuild(state, now):
    """The state after its owners changed at `now`: the past kept, the future made from the live owners."""
    segments = []
    for start, end, load in state["segments"]:
        if start < now:
            segments.append([start, min(end, now), load])
    owners = {k: v for k, v in state["owners"].items() if v[1] > now and v[0] > 0}
    at = now
    for expires in sorted({v[1] for v in owners.values()}):
        load = min(1.0, sum(v[0] for v in owners.values() if v[1] >= expires))
        if expires > at and load > 0:
            segments.append([at, expires, load])
        at = expires
    load_s = state["load_s"]
    kept = []
    for seg in segments:
        if seg[1] <= now - KEEP_S:
            load_s += (seg[1] - seg[0]) * seg[2]
        else:
            kept.append(seg)
    return {"version": STATE_VERSION, "load_s": load_s, "segments": kept, "owners": owners}


def set_owner(state, owner, load, now, lease_s=LEASE_S):
    """`owner` loads the GPU with `load` (0..1) from `now` until now + lease_s (0: it stops)."""
    owners = dict(state["owners"])
    if load > 0:
        owners[owner] = [min(1.0, float(load)), now + max(lease_s, 0.0)]
    else:
        owners.pop(owner, None)
    return rebuild(dict(state, owners=owners), now)


# --------------------------------------------------------------------------------------------
# Power of one GPU (pure)
# --------------------------------------------------------------------------------------------

def _watts(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def idle_and_peak(gpu):
    """(idle W, peak W) of a merged layout entry, or None when it reports no power (e.g. "[N/A]")."""
    idle = _watts(gpu.get("power.draw"))
    if idle is None:
        return None
    limit = _watts(gpu.get("enforced.power.limit")) or _watts(gpu.get("power.limit"))
    peak = _watts(gpu.get("power.peak")) or (limit * PEAK_SHARE if limit else idle)
    return idle, max(idle, peak)


def reading(state, idle_w, peak_w, boot, now):
    """Reading at `now`: instant W, the mean W of the last second, the counter in mJ, the load."""
    span = peak_w - idle_w
    load = load_at(state, now)
    window = load_seconds(state, now) - load_seconds(state, now - AVERAGE_WINDOW_S)
    energy_j = idle_w * max(0.0, now - boot) + span * load_seconds(state, now)
    return Reading(idle_w + span * load, idle_w + span * window / AVERAGE_WINDOW_S, int(energy_j * 1000), load)


# --------------------------------------------------------------------------------------------
# I/O
# --------------------------------------------------------------------------------------------

def state_dir(environ=None):
    environ = os.environ if environ is None else environ
    return environ.get("SIM_GPU_STATE_DIR") or DEFAULT_STATE_DIR


def state_path(directory, key):
    return os.path.join(directory, "power", "%s.json" % key)


def gpu_key(gpu):
    """The name of a GPU's state file: its UUID, else its index."""
    return str(gpu.get("uuid") or gpu.get("index"))


def visible_keys(environ=None):
    """The state-file keys of the GPUs a process sees: CUDA_VISIBLE_DEVICES (indices or UUID prefixes, up to
    the first that names no GPU, as CUDA reads it; unset: GPU 0) against $SIM_GPU_LAYOUT. [] without a layout."""
    environ = os.environ if environ is None else environ
    try:
        with open(environ.get("SIM_GPU_LAYOUT") or "/etc/sim-gpu/layout.json") as handle:
            layout = json.load(handle)
    except (OSError, ValueError):
        return []
    defaults = layout.get("gpu_defaults") or {}
    gpus = [dict(defaults, **entry, index=i) for i, entry in enumerate(layout.get("gpus") or [])]
    spec = environ.get("CUDA_VISIBLE_DEVICES")
    keys = []
    for token in ("0" if spec is None else spec).split(","):
        token = token.strip()
        if token.isdigit() and int(token) < len(gpus):
            found = [gpus[int(token)]]
        else:
            found = [g for g in gpus if token.startswith("GPU-") and str(g.get("uuid", "")).startswith(token)]
        if len(found) != 1:
            break
        if gpu_key(found[0]) not in keys:
            keys.append(gpu_key(found[0]))
    return keys


def boot_epoch(proc_root="/proc", layout_path=None):
    """The fixed "driver load" time: the host's boot (btime), else the layout file's mtime, else 0."""
    try:
        with open(os.path.join(proc_root, "stat")) as handle:
            for line in handle:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.stat(layout_path).st_mtime if layout_path else 0.0
    except OSError:
        return 0.0


def read_state(path):
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return empty_state()
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        return empty_state()
    return data


class _Lock:
    """flock on $dir/power/.lock; without a writable/readable lock file, no lock (readers still read)."""

    def __init__(self, directory, exclusive):
        self.path = os.path.join(directory, "power", ".lock")
        self.exclusive = exclusive
        self.handle = None

    def __enter__(self):
        try:
            if self.exclusive:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self.handle = open(self.path, "a")
            fcntl.flock(self.handle, fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH)
        except OSError:
            if self.handle is not None:
                self.handle.close()
            self.handle = None
            if self.exclusive:
                raise
        return self

    def __exit__(self, *exc):
        if self.handle is not None:
            self.handle.close()   # closing releases the lock


def read_gpus(directory, keys, powers, boot):
    """{key: Reading} for GPUs by key, each with its (idle W, peak W); one consistent clock for all."""
    with _Lock(directory, exclusive=False):
        states = {key: read_state(state_path(directory, key)) for key in keys}
        now = time.time()
    return {key: reading(states[key], powers[key][0], powers[key][1], boot, now) for key in keys}


def write_state(path, state):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as handle:
        json.dump(state, handle, separators=(",", ":"))
    os.replace(tmp, path)


def publish(owner, keys, load, lease_s=LEASE_S, directory=None):
    """Set `owner`'s load (0..1) on the GPUs named by `keys` (UUIDs or indices) from now; 0 ends it.

    Returns the write time. Raises OSError when the state dir cannot be written."""
    directory = directory or state_dir()
    with _Lock(directory, exclusive=True):
        now = time.time()
        for key in keys:
            path = state_path(directory, key)
            write_state(path, set_owner(read_state(path), owner, load, now, lease_s))
    return now


class Publisher:
    """A loader's side, cheap to call per step: writes only when the load changes by more than `step`
    (at most every `min_interval_s`, except going idle, at once) or the lease needs renewing."""

    def __init__(self, owner, keys, directory=None, min_interval_s=0.05, step=0.02, lease_s=LEASE_S):
        self.owner, self.keys, self.directory = owner, list(keys), directory
        self.min_interval_s, self.step, self.lease_s = min_interval_s, step, lease_s
        self.load, self.expires, self.written_at = 0.0, 0.0, 0.0
        self.writes = 0

    def set(self, load, busy_for_s=0.0):
        """The load from now on; `busy_for_s`: how long the caller will not call again (a long step)."""
        if not self.keys:
            return
        now = time.time()
        load = max(0.0, min(1.0, float(load)))
        lease = max(self.lease_s, busy_for_s + 1.0)
        if load <= 0:
            if self.load <= 0:
                return
        elif (abs(load - self.load) < self.step or now - self.written_at < self.min_interval_s) and \
                self.expires - now > busy_for_s + self.lease_s / 2 and self.load > 0:
            return
        try:
            self.written_at = publish(self.owner, self.keys, load, lease, self.directory)
        except OSError:
            return
        self.writes += 1
        self.load = load
        self.expires = self.written_at + lease if load > 0 else 0.0
