"""The runtime's one error type for a server that cannot be started or reached.

At the bottom of the runtime's layers (it imports nothing of the runtime), so the launch
modes (`launch` and each mode's provider), the pool and the drift guard all raise it
without importing one another.
"""


class LaunchError(RuntimeError):
    """A server could not be started or reached. Uncaught, it prints as its message alone
    (see `process_hooks`): a launch failure is one line, plus the server's log tail."""
