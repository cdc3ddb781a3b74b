"""``python -m sglang.launch_server``: start the emulated SGLang server."""

import sys

from sglang._sim_server import main

if __name__ == "__main__":
    sys.exit(main())
