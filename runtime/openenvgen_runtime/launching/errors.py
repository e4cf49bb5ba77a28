"""The runtime's one error type for a server that cannot be started or reached.

At the bottom of the launching layers (it imports only `access.tokens`), so the launch
modes (`launch` and each mode's provider), the pool and the drift guard all raise it
without importing one another.
"""

from openenvgen_runtime.access.tokens import for_people


class LaunchError(RuntimeError):
    """A server could not be started or reached. Uncaught, it prints as its message alone
    (see `process_hooks`): a launch failure is one line, plus the server's log tail. The
    message names the run's servers without their relays' tokens (`for_people`)."""

    def __init__(self, message: str) -> None:
        super().__init__(for_people(message))


# The exit codes of the runtime's command lines (`openenv-gen play` and `doctor` run them),
# sysexits(3) as every openenv-gen command's: the same failure exits with the same code.
USAGE_EXIT = 64
"""EX_USAGE: a bad argument (a package not found, a bad `--set`)."""
UNAVAILABLE_EXIT = 69
"""EX_UNAVAILABLE: the env could not be started or reached, or its server failed."""
SOFTWARE_EXIT = 70
"""EX_SOFTWARE: anything else."""
