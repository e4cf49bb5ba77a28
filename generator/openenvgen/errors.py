"""Errors the CLI turns into one line on stderr and a documented exit code.

Exit codes follow sysexits(3), so they never collide with `check`'s 1 (stale) and 2 (drift).
"""


class GenError(Exception):
    """A failure the user can act on; its message is printed as one line."""

    exit_code = 70  # EX_SOFTWARE

    def __init__(self, message: str) -> None:
        # One line, always: the CLI prints nothing else.
        super().__init__(" ".join(str(message).split()))


class UsageError(GenError):
    """Bad arguments: an unknown env name, a bad --out, conflicting options."""

    exit_code = 64  # EX_USAGE


class SourceError(GenError):
    """The schema source failed: unreachable host, timeout, HTTP error, not OpenEnv."""

    exit_code = 69  # EX_UNAVAILABLE


class SchemaError(GenError):
    """The schema, metadata or tool list cannot be turned into a safe package."""

    exit_code = 65  # EX_DATAERR


class OutputError(GenError):
    """The output location cannot be written without losing something."""

    exit_code = 73  # EX_CANTCREAT


class StaleError(GenError):
    """`publish` refused a generated package that differs from a fresh render (as `check` does)."""

    exit_code = 1  # the same code `check` exits with for a stale package


class GenerationError(GenError):
    """`publish`: a package does not build, or its distributions fail `twine check`."""

    exit_code = 65  # EX_DATAERR


class PublishError(GenError):
    """`publish`: the index is unreachable or rejected an upload, or build/twine is missing."""

    exit_code = 69  # EX_UNAVAILABLE


class CredentialsError(PublishError):
    """`publish`: no credentials for the index, or the index refused them."""

    exit_code = 77  # EX_NOPERM
