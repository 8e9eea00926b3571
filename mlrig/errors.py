"""Errors a user can act on.

Every problem caused by input (an unknown GPU, a negative batch, a malformed file) raises
`MlrigError` with one line that names the problem and the fix. The CLI prints that line and
exits with status 2; anything else is a bug and may show a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class MlrigError(ValueError):
    """A user-facing error: one line, naming the problem and what to do instead."""

    exit_code = 2


class UnknownNameError(MlrigError):
    """A model or GPU name that does not resolve; carries the closest candidates."""

    def __init__(self, kind: str, name: str, candidates: list[str], hint: str = "") -> None:
        self.kind = kind
        self.name = name
        self.candidates = candidates
        msg = f"unknown {kind} {name!r}"
        if candidates:
            msg += f"; did you mean: {', '.join(candidates)}?"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


class AmbiguousNameError(MlrigError):
    """A name that matches several catalog entries equally well."""

    def __init__(self, kind: str, name: str, candidates: list[str], typed: list[str] | None = None,
                 described: list[str] | None = None) -> None:
        """`typed`: names the user can give instead, one per candidate (a GPU's "M2 Max 64GB"); `described`: each
        candidate's id with its full name, listed when there is no shorter spelling to offer."""
        self.kind = kind
        self.name = name
        self.candidates = candidates
        if typed:
            super().__init__(f"ambiguous {kind} {name!r}: {len(candidates)} variants ({', '.join(candidates)}) whose "
                             f"memory differs, so the answer does; give one: {', '.join(repr(t) for t in typed)}")
        else:
            super().__init__(f"ambiguous {kind} {name!r}: matches {', '.join(described or candidates)}; "
                             "give one of these ids")


def closest(name: str, choices: Iterable[str], n: int = 5) -> list[str]:
    """Closest names by difflib ratio (what `git` and `pip` do for typos)."""
    return difflib.get_close_matches(name, list(choices), n=n, cutoff=0.4)


def require_positive(name: str, value: float | int | None, *, allow_zero: bool = False,
                     maximum: float | None = None) -> None:
    """Reject NaN, negative (or zero) and absurd numbers with a message that names the field."""
    if value is None:
        return
    if value != value:  # NaN
        raise MlrigError(f"{name} is NaN; give a finite number")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise MlrigError(f"{name} must be {bound}, got {value}")
    if maximum is not None and value > maximum:
        raise MlrigError(f"{name}={value} is absurdly large (limit {maximum:g}); check the units")
