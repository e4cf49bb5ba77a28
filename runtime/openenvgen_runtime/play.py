"""Play one episode of a generated package at a terminal: `python -m openenvgen_runtime.play`.

What `openenv-gen play` runs; the player itself is `openenvgen_runtime.client.play`.
"""

import sys

from openenvgen_runtime.client.play import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
