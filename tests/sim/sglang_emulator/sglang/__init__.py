"""An emulator of the SGLang server for tests with no GPU (see tests/sim/README.md).

Only ``python -m sglang.launch_server`` is provided; the "+sim" version marks it as the emulator.
"""

__version__ = "0.5.23+sim"
