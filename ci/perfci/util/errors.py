"""Errors a user sees as one clear line, each carrying the process exit code.

Exit codes are a contract with the workflows: 0 ok, 1 regression found,
2 bad input (a user mistake), 3 infrastructure failure (server, sysbench, host)
or an internal error (a bug: never 1, which would read as a regression).
"""

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_INFRA = 3
EXIT_INTERRUPTED = 130  # Ctrl-C / SIGTERM: what was kept is said on stderr


class PerfciError(Exception):
    """Base error: `str(err)` is the one-line message; `detail` is optional context
    (an error-log tail, a stderr tail) printed below it."""

    exit_code = EXIT_INFRA

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


class BadInput(PerfciError):
    """The user gave us something wrong: a scenario file, an option, a path."""

    exit_code = EXIT_BAD_INPUT


class InfraFailure(PerfciError):
    """Something outside the user's input failed: server start, sysbench, the host."""

    exit_code = EXIT_INFRA


class NewerFormat(BadInput):
    """A file written by a newer perfci: never half-read, never treated as damage."""
