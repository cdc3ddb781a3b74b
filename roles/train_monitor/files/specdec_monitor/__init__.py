# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training monitor's package (the program is specdec_train_monitor.py beside it; its docstring says what it
serves): gpus, evaluation, status and server, one concern each. Their public names are here too.
"""

from __future__ import annotations

from .evaluation import EVALUATION, EVALUATION_BYTES, EVALUATION_FIELDS, Evaluation, parse_evaluation
from .gpus import (
    GPU_HISTORY, GPU_HISTORY_BYTES, GPU_INTERVAL_S, GPU_SPARK_SAMPLES, GpuWatch, gpu_record, idle_seconds, import_telemetry,
    unit_environment, visible_devices)
from .server import LOOPBACK_NAMES, SECURITY_HEADERS, STATIC, MonitorServer, main, make_handler, parse_args
from .status import (
    CHUNK_BYTES, HISTORY_POINTS, INDEX_READ_BYTES, READ_LIMIT_BYTES, SERVED_FILES, UNIT_PROPERTIES, Monitor, parse_show,
    service_state, unit_state)

__all__ = [
    'CHUNK_BYTES', 'EVALUATION', 'EVALUATION_BYTES', 'EVALUATION_FIELDS', 'Evaluation', 'GPU_HISTORY', 'GPU_HISTORY_BYTES',
    'GPU_INTERVAL_S', 'GPU_SPARK_SAMPLES', 'GpuWatch', 'HISTORY_POINTS', 'INDEX_READ_BYTES', 'LOOPBACK_NAMES', 'Monitor',
    'MonitorServer', 'READ_LIMIT_BYTES', 'SECURITY_HEADERS', 'SERVED_FILES', 'STATIC', 'UNIT_PROPERTIES', 'gpu_record',
    'idle_seconds', 'import_telemetry', 'main', 'make_handler', 'parse_args', 'parse_evaluation', 'parse_show',
    'service_state', 'unit_environment', 'unit_state', 'visible_devices']
