"""Byte and rate units. GiB (2^30) for memory sizes, GB (10^9) for bandwidth, as vendors do.

Output always says which: `*_gib` fields are 2^30 bytes, `*_gb_s` fields are 10^9 bytes/s.
"""

from __future__ import annotations

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
