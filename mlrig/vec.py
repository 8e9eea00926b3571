"""Arithmetic that takes Python numbers or numpy arrays alike (issue 15).

The estimators' formulas are written once with these helpers: `mlrig plan` calls them with numbers and
stays in plain Python (no numpy import, no per-call overhead); a sweep calls the same formulas with
arrays of batch sizes and context lengths, and each helper switches to numpy's element-wise twin.
The twins round every operation the same IEEE-754 way, and where numpy's kernel may not (`power`,
Python's correctly rounded `round`), the array path applies Python's own operation per element, so a
sweep's figures equal `plan`'s exactly (tests/test_batch.py checks this on random plans).
"""

from __future__ import annotations

import math
from typing import Any

Num = Any  # a Python int / float / bool, or a numpy array of them


# Python's numbers: each helper tells them by their type first (a set look-up, no call), since the
# scalar path runs them a few dozen times per plan and `fit` / `limits` run thousands of plans
_PLAIN = frozenset({int, float, bool})


def is_array(*xs: Num) -> bool:
    for x in xs:  # noqa: SIM110 - a loop, not any(genexpr): this runs a dozen times per formula call
        if hasattr(x, "shape"):
            return True
    return False


def maximum(a: Num, b: Num) -> Num:
    if (type(a) not in _PLAIN or type(b) not in _PLAIN) and is_array(a, b):
        import numpy as np

        return np.maximum(a, b)
    return max(a, b)


def minimum(a: Num, b: Num) -> Num:
    if (type(a) not in _PLAIN or type(b) not in _PLAIN) and is_array(a, b):
        import numpy as np

        return np.minimum(a, b)
    return min(a, b)


def where(cond: Num, a: Num, b: Num) -> Num:
    """`a if cond else b`, element-wise for arrays (both sides are evaluated: keep them finite). Labels
    (a side that is a str) make an array of Python strings (object dtype), as the one-plan path holds
    them: numpy's fixed-width unicode arrays cost several times more to build, and more again to turn
    into the objects a sweep's rows are made of."""
    if (type(cond) not in _PLAIN or type(a) not in _PLAIN or type(b) not in _PLAIN) and is_array(cond, a, b):
        import numpy as np

        if type(a) is str or type(b) is str:
            a, b = (np.array(x, object) if type(x) is str else x for x in (a, b))
        return np.where(cond, a, b)
    return a if cond else b


def both(a: Num, b: Num) -> Num:
    """`a and b` for truth values."""
    if (type(a) not in _PLAIN or type(b) not in _PLAIN) and is_array(a, b):
        return a & b
    return bool(a and b)


def ceil_int(x: Num) -> Num:
    if type(x) not in _PLAIN and is_array(x):
        import numpy as np

        return np.ceil(x).astype(np.int64)
    return math.ceil(x)


def trunc_int(x: Num) -> Num:
    """`int(x)` (towards zero) for floats."""
    if type(x) not in _PLAIN and is_array(x):
        import numpy as np

        return np.trunc(x).astype(np.int64)
    return int(x)


def round_int(x: Num) -> Num:
    """`round(x)` of a float: the nearest integer, halves to even (numpy's rint does the same)."""
    if type(x) not in _PLAIN and is_array(x):
        import numpy as np

        return np.rint(x).astype(np.int64)
    return round(x)


def power(base: Num, exponent: Num) -> Num:
    """`base ** exponent`, per element with Python's own `**` (numpy's SIMD pow may differ in the last bit).
    With one base and an array of exponents (a sweep's token counts: 100,000 of them hold a few hundred
    distinct values), Python's `**` runs once per distinct exponent (`_distinct`) and the results are
    gathered back."""
    if is_array(base, exponent):
        import numpy as np

        e = np.asarray(exponent)
        if np.ndim(base) == 0 and e.dtype.kind in "iuf":
            b = float(base)
            values, at = _distinct(e)
            return np.array([b ** y for y in values.tolist()], float)[at]
        bb, ee = np.broadcast_arrays(np.asarray(base, dtype=float), e)
        return np.fromiter((x ** y for x, y in zip(bb.ravel().tolist(), ee.ravel().tolist(), strict=True)),
                           float, bb.size).reshape(bb.shape)
    return base ** exponent


def _distinct(x: Any) -> tuple[Any, Any]:
    """The distinct values of a numeric array and, for each element, its value's index among them:
    `values[at]` is `x`. Integers spanning up to 2^24 (token counts, batch sizes: 256 sequences of 32k
    tokens span 8.4 M) in O(n) through a table indexed by value (numpy's zeros are calloc'ed: only the
    pages the distinct values land on are touched, at most 64 MiB): each value's slot takes one of its
    elements' positions, the elements found there are the values' representatives, then each slot takes
    its value's index. Others by sorting (np.unique, whose NaNs collapse into one that `searchsorted` finds)."""
    import numpy as np

    if x.size and (x.dtype.kind == "i" or (x.dtype.kind == "u" and x.dtype.itemsize < 8)):
        wide = x.astype(np.int64, copy=False)  # x - lo in x's own width may overflow (int8: 100 - -100)
        lo = int(wide.min())
        span = int(wide.max()) - lo + 1
        if span <= 1 << 24:
            index = np.int32 if x.size < 1 << 31 else np.int64
            offset = (wide - lo).ravel()
            slot = np.zeros(span, index)
            position = np.arange(offset.size, dtype=index)
            slot[offset] = position  # of the elements sharing a value, one position lands (which: no matter)
            representatives = np.flatnonzero(slot[offset] == position)
            slot[offset[representatives]] = np.arange(representatives.size, dtype=index)
            return x.ravel()[representatives], slot[offset].reshape(x.shape)
    values = np.unique(x)
    return values, np.searchsorted(values, x)


def round_to(x: Num, digits: int) -> Num:
    """Python's `round(x, digits)` (correctly rounded), per element for arrays."""
    if is_array(x):
        import numpy as np

        # rint(x 10^d) / 10^d is Python's result wherever x 10^d is not within rounding error of a
        # half: the integer is then the correct one and the division rounds it correctly, as Python's
        # float(repr) does. The few near halves take Python's own round.
        a = np.asarray(x, dtype=float)
        scaled = a * 10.0 ** digits
        out = np.rint(scaled) / 10.0 ** digits
        # the product's rounding error is an ulp of `scaled` (2^-52 relative); 1e-9 leaves a wide margin
        near = np.abs(scaled - np.floor(scaled) - 0.5) <= 1e-9 * np.maximum(1.0, np.abs(scaled))
        near |= ~np.isfinite(scaled)
        for i in np.flatnonzero(near).tolist():
            out.flat[i] = round(float(a.flat[i]), digits)
        return out
    return round(x, digits)
