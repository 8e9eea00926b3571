"""SIGTERM and SIGHUP handled like Ctrl-C: the running command unwinds (temporary files are removed,
reports are written) instead of dying on the spot.

`main()` installs `install()` once; the signal then raises `Terminated`, a `KeyboardInterrupt`, so every
`finally:` and `except KeyboardInterrupt:` cleanup path that already serves Ctrl-C serves these too.
The CLI exits 128 + the signal number, as a shell reports a process killed by it.
"""

from __future__ import annotations

import signal
from types import FrameType

HANDLED = ("SIGTERM", "SIGHUP")


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM or SIGHUP arrives."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def _raise(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(signum)


def install() -> None:
    """Turn SIGTERM/SIGHUP into `Terminated` (main thread only; a no-op where a signal is missing)."""
    for name in HANDLED:
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            if signal.getsignal(sig) is signal.SIG_IGN:  # started under nohup: keep ignoring SIGHUP
                continue
            signal.signal(sig, _raise)
        except ValueError:  # not the main thread (e.g. inside a test runner thread)
            return


def exit_status(exc: KeyboardInterrupt) -> int:
    """128 + signal number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + (exc.signum if isinstance(exc, Terminated) else int(signal.SIGINT))


def describe(exc: KeyboardInterrupt) -> str:
    return exc.name if isinstance(exc, Terminated) else "Ctrl-C"
