"""Byte and rate units. GiB (2^30) for memory sizes, GB (10^9) for bandwidth, as vendors do.

Output always says which: `*_gib` fields are 2^30 bytes, `*_gb_s` fields are 10^9 bytes/s.
"""

from __future__ import annotations

import math
import re

KiB = 1024
MiB = 1024**2
GiB = 1024**3
KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4
TFLOPS = 1e12


def to_gib(n_bytes: float) -> float:
    return n_bytes / GiB


def gib(n_gib: float) -> float:
    """GiB -> bytes."""
    return n_gib * GiB


def gb(n_gb: float) -> float:
    """GB (10^9) -> bytes; vendors quote card memory in GB that are really GiB-sized parts."""
    return n_gb * GB


# ---- token counts: 8192, 8k, 32K, 128k, 1M, 1e11, 15T (flags and plan files alike) ----

_TOKEN_RE = re.compile(r"^\s*([0-9][0-9_,]*(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)
# Context-like counts follow model cards: "8k context" is 8,192 tokens and "128k" 131,072 (Llama 3.1's
# max_position_embeddings); "1M" is 1,048,576. Totals of training tokens follow papers: "15T" is 15e12.
_BINARY = {"": 1, "k": 1024, "m": 1024**2, "b": 1024**3, "t": 1024**4}
_DECIMAL = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_token_count(text: str | int | float, *, binary: bool = True, flag: str = "token count") -> int:
    """'8k' -> 8192 (binary: k = 1024, as context lengths are quoted) or 8000 (binary=False: k = 1000, for
    totals such as --tokens 15T). Plain integers, '8_192', '8,192' and '1e11' are accepted too; anything
    else raises MlrigError with one line naming the flag and the accepted forms."""
    from mlrig.errors import MlrigError

    if isinstance(text, int | float) and not isinstance(text, bool):
        return int(text)
    m = _TOKEN_RE.match(str(text))
    if m is None:
        raise MlrigError(f"{flag}: cannot read {text!r} as a token count; "
                         "give an integer or a short form such as 8k, 32k, 128k, 1M")
    number = float(m.group(1).replace("_", "").replace(",", ""))
    value = number * (_BINARY if binary else _DECIMAL)[m.group(2).lower()]
    if not math.isfinite(value):  # '1e999' is infinity: no integer, and no count of tokens
        raise MlrigError(f"{flag}: {text!r} is too large for a token count; give e.g. 128k, 1M or 1e11")
    if value != int(value) and value < 1e6:
        raise MlrigError(f"{flag}: {text!r} is not a whole number of tokens (token count)")
    return int(value)


# ---- money: 2000, 2k, $2,000, 1.5M (US dollars) ----

_USD_RE = re.compile(r"^\s*\$?\s*([0-9][0-9_,]*(?:\.[0-9]+)?)\s*([km]?)\s*(?:usd)?\s*$", re.IGNORECASE)


def parse_usd(text: str | int | float, flag: str = "amount") -> float:
    """A dollar amount as people write it: '2000', '2,000', '$2000', '2k' (2,000), '1.5M' (1,500,000; money is
    decimal, k = 1000). Anything else (a negative, another currency, '2kk') raises MlrigError naming the flag."""
    from mlrig.errors import MlrigError

    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    m = _USD_RE.match(str(text))
    if m is None:
        raise MlrigError(f"{flag}: cannot read {text!r} as US dollars; give e.g. 2000, 2k or $2,000")
    return float(m.group(1).replace("_", "").replace(",", "")) * {"": 1.0, "k": 1e3, "m": 1e6}[m.group(2).lower()]


def read_rate_text(bytes_per_s: float) -> str:
    """A data rate in decimal units (10^3 steps) with three significant figures, in the unit that keeps it at 1 or
    more: a fine-tune's token stream reads kB/s ("18.4 kB/s", not "0.018 MB/s"), a disk GB/s."""
    for unit, scale in (("GB/s", GB), ("MB/s", MB), ("kB/s", KB)):
        if bytes_per_s >= scale:
            return f"{bytes_per_s / scale:.3g} {unit}"
    return f"{bytes_per_s:.3g} B/s"
