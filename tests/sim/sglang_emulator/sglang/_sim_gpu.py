"""The emulator's view of the simulated GPUs: the layout, what is free, and its own claim.

The fake ``nvidia-smi`` (tests/sim/nvidia_smi) owns the layout format; this side reads it
defensively, since all it needs is each GPU's index, UUID, name and total memory.

Power: the engines publish their load on the claimed GPUs through ``sim_gpu_power`` (installed next to the
fake nvidia-smi, on the image's Python path); without that module nothing is published.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from typing import Dict, List, Optional

try:
    import sim_gpu_power
except ImportError:  # not on a simulated host (a unit test that does not put it on the path)
    sim_gpu_power = None

DEFAULT_LAYOUT = "/etc/sim-gpu/layout.json"
DEFAULT_STATE_DIR = "/run/sim-gpu"
DEFAULT_MEMORY_TOTAL_MIB = 97887  # RTX PRO 6000 Blackwell, as on CT200

_TOTAL_KEYS = ("memory.total", "memory_total_mib", "memory_total", "memory_mib", "total_memory_mib", "total_mib")


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str
    name: str
    memory_total_mib: int
    memory_reserved_mib: int = 0


def _number(value) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip().split()[0] if value.strip() else ""
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _memory_total(entry: dict) -> Optional[int]:
    for key in _TOTAL_KEYS:
        number = _number(entry.get(key))
        if number:
            return int(number)
    memory = entry.get("memory")
    if isinstance(memory, dict):
        for key in ("total_mib", "total", "memory_total_mib"):
            number = _number(memory.get(key))
            if number:
                return int(number)
    return None


def parse_layout(data) -> List[Gpu]:
    """GPUs from a layout document: ``gpus`` entries over ``gpu_defaults``, indexed by position."""
    if isinstance(data, dict):
        defaults = data.get("gpu_defaults") if isinstance(data.get("gpu_defaults"), dict) else {}
        entries = data.get("gpus", [])
    else:
        defaults, entries = {}, data
    gpus = []
    for position, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict):
            continue
        merged = dict(defaults)
        merged.update(entry)
        gpus.append(
            Gpu(
                index=position,
                uuid=str(merged.get("uuid", "")),
                name=str(merged.get("name", "")),
                memory_total_mib=_memory_total(merged) or DEFAULT_MEMORY_TOTAL_MIB,
                memory_reserved_mib=int(_number(merged.get("memory.reserved")) or 0),
            )
        )
    return gpus


def load_layout(path: Optional[str] = None) -> Optional[List[Gpu]]:
    """The host's GPUs, or None when there is no readable layout (then the defaults apply)."""
    path = path or os.environ.get("SIM_GPU_LAYOUT", DEFAULT_LAYOUT)
    try:
        with open(path, encoding="utf-8") as handle:
            return parse_layout(json.load(handle))
    except (OSError, ValueError):
        return None


def visible_gpus(layout: Optional[List[Gpu]], cuda_visible_devices: Optional[str]) -> Optional[List[Gpu]]:
    """The GPUs CUDA would expose, in CUDA's order; None when that cannot be known (no layout).

    Like CUDA, the list stops at the first entry that names no GPU.
    """
    if layout is None:
        if cuda_visible_devices is None:
            return None
        names = [part.strip() for part in cuda_visible_devices.split(",") if part.strip()]
        return [Gpu(i, name, "", DEFAULT_MEMORY_TOTAL_MIB) for i, name in enumerate(names)]
    if cuda_visible_devices is None:
        return list(layout)
    chosen: List[Gpu] = []
    for part in cuda_visible_devices.split(","):
        name = part.strip()
        gpu = None
        if name.isdigit() and int(name) < len(layout):
            gpu = layout[int(name)]
        elif name.startswith("GPU-"):
            matches = [g for g in layout if g.uuid and g.uuid.startswith(name)]
            gpu = matches[0] if len(matches) == 1 else None
        if gpu is None:
            break
        if gpu not in chosen:
            chosen.append(gpu)
    return chosen


def _run_smi(args: List[str]) -> Optional[str]:
    try:
        done = subprocess.run(
            ["nvidia-smi"] + args, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def free_mib_excluding(own_pid: int) -> Optional[Dict[str, int]]:
    """MiB free on each GPU (by UUID) if this process held nothing, as nvidia-smi reports it.

    None when nvidia-smi is missing or fails: then nothing is checked.
    """
    gpus = _run_smi(["--query-gpu=uuid,memory.free", "--format=csv,noheader,nounits"])
    if gpus is None:
        return None
    free: Dict[str, int] = {}
    for line in gpus.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and _number(parts[1]) is not None:
            free[parts[0]] = int(_number(parts[1]))
    apps = _run_smi(["--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv,noheader,nounits"])
    for line in (apps or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0] == str(own_pid) and parts[1] in free:
            free[parts[1]] += int(_number(parts[2]) or 0)
    return free


def claim_path(pid: Optional[int] = None) -> str:
    state_dir = os.environ.get("SIM_GPU_STATE_DIR", DEFAULT_STATE_DIR)
    return os.path.join(state_dir, "claims", "%d.json" % (pid or os.getpid()))


_claimed_gpus: Optional[List[str]] = None
_publishers: List["sim_gpu_power.Publisher"] = []


def write_claim(memory_mib: int, gpus: Optional[List[str]] = None, utilization_pct: Optional[int] = None) -> str:
    """Claim ``memory_mib`` on each of ``gpus`` (default: CUDA_VISIBLE_DEVICES); atomic replace."""
    global _claimed_gpus
    if gpus:
        _claimed_gpus = list(gpus)
    path = claim_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    claim = {"memory_mib": int(memory_mib)}
    if gpus:
        claim["gpus"] = list(gpus)
    if utilization_pct is not None:
        claim["utilization_pct"] = int(utilization_pct)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(claim, handle)
        handle.write("\n")
    os.replace(tmp, path)
    return path


def remove_claim() -> None:
    for publisher in list(_publishers):
        publisher.set(0.0)
    try:
        os.unlink(claim_path())
    except OSError:
        pass


def power_publisher(dp_rank: int, tp: int):
    """The publisher of one DP rank's load on its GPUs (the claimed ones, tp per rank, in order), or None
    when nothing can be published (no power model, or no claim naming the GPUs)."""
    if sim_gpu_power is None or not _claimed_gpus:
        return None
    keys = _claimed_gpus[dp_rank * tp:(dp_rank + 1) * tp]
    if not keys:
        return None
    publisher = sim_gpu_power.Publisher("%d.%d" % (os.getpid(), dp_rank), keys)
    _publishers.append(publisher)
    return publisher
