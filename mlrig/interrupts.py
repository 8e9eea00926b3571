"""Ctrl-C, SIGTERM and SIGHUP stop a command the same way: it unwinds (temporary files are removed,
jobs are stopped, reports are written) instead of dying on the spot.

`main()` calls `install()`: the three signals then raise `Terminated` in the main thread. It derives
from BaseException, not KeyboardInterrupt, because click/typer turn a KeyboardInterrupt into a bare
exit 130 before `main()` sees it; code that cleans up catches `STOP` (both), so library callers that
never install the handlers still get Ctrl-C's KeyboardInterrupt handled. The CLI then prints one line
and exits 128 + the signal number, as a shell reports a process killed by it (130, 143, 129).
"""

from __future__ import annotations

import signal
from types import FrameType


class Terminated(BaseException):
    """Raised in the main thread when SIGINT, SIGTERM or SIGHUP arrives (after `install()`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


STOP: tuple[type[BaseException], ...] = (KeyboardInterrupt, Terminated)
"""What a cleanup path catches to handle every way of being stopped."""


def _raise(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(signum)


def install() -> None:
    """Turn SIGINT/SIGTERM/SIGHUP into `Terminated` (main thread only; missing signals are skipped)."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            if signal.getsignal(sig) is signal.SIG_IGN:  # started under nohup or `&`: keep ignoring
                continue
            signal.signal(sig, _raise)
        except ValueError:  # not the main thread (e.g. inside a test runner thread)
            return


def signum(exc: BaseException) -> int:
    """The signal that stopped us: SIGINT for a plain KeyboardInterrupt."""
    return exc.signum if isinstance(exc, Terminated) else int(signal.SIGINT)


def exit_status(exc: BaseException) -> int:
    """128 + signal number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + signum(exc)


def describe(exc: BaseException) -> str:
    n = signum(exc)
    return "Ctrl-C" if n == signal.SIGINT else signal.Signals(n).name
