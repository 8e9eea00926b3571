"""Accelerator catalog: memory, bandwidth and dense tensor rates, each entry with its source.

Data lives in `mlrig/data/gpus.json` (built from scripts/data/accelerators_reference.csv
plus the cards users ask about that it lacks). Figures are *dense* tensor rates with FP32
accumulate (GeForce cards run FP16/BF16/FP8 at half rate with FP32 accumulate; vendors often
quote 2:4-sparse figures, which we never use).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field

HardwareClass = Literal["geforce", "workstation", "datacenter", "apple", "amd", "intel", "other"]


class GPU(BaseModel):
    """One accelerator product (SXM, PCIe and NVL variants are separate entries)."""

    id: str  # catalog id, e.g. "rtx-4090", "h100-sxm-80gb"
    name: str  # display name, e.g. "NVIDIA GeForce RTX 4090"
    vendor: str  # NVIDIA | AMD | Intel | Apple | ...
    hardware_class: HardwareClass
    architecture: str | None = None
    release_year: int | None = None
    # Plain `[]`: pydantic copies mutable defaults per instance, and `Field(default_factory=list)` makes it
    # inspect list's signature, which compiles tokenize's big regex (~6 ms of every start-up).
    aliases: list[str] = []  # extra spellings incl. NVML names

    memory_gib: float = Field(gt=0, description="what the device reports as total (2^30 bytes)")
    usable_memory_gib: float | None = Field(
        None, gt=0, description="what a framework can use (e.g. Apple's GPU working-set limit)")
    memory_type: str | None = None
    memory_bandwidth_gb_s: float = Field(gt=0, description="10^9 bytes/s")

    fp32_tflops: float | None = None  # non-tensor FP32
    fp16_tflops_dense: float | None = None  # tensor, dense, FP32 accumulate
    bf16_tflops_dense: float | None = None
    fp8_tflops_dense: float | None = None
    int8_tops_dense: float | None = None
    fp4_tflops_dense: float | None = None

    tdp_w: float | None = None
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    nvlink: str | None = None  # e.g. "NVLink 4, 900 GB/s total" or None
    nvlink_gb_s: float | None = None  # per-direction GPU-to-GPU bandwidth where NVLink exists
    form_factor: str | None = None
    slots: float | None = None
    launch_price_usd: float | None = None
    # boards software sees as several GPUs (K80, MI250X): all figures are per device
    devices_per_board: int | None = None

    source: str  # primary source URL(s)
    source_date: str  # when the figures were taken, ISO date
    verification: str | None = None
    notes: str | None = None

    @property
    def capacity_gib(self) -> float:
        """Memory a workload may plan against."""
        return self.usable_memory_gib or self.memory_gib

    def tensor_tflops(self, dtype: str) -> float | None:
        """Dense tensor rate for the compute dtype; falls back to FP16 for BF16-less parts."""
        d = dtype.lower()
        if d in ("fp8", "e4m3", "e5m2"):
            return self.fp8_tflops_dense or self.fp16_tflops_dense
        if d in ("bf16", "bfloat16"):
            return self.bf16_tflops_dense or self.fp16_tflops_dense
        if d in ("fp32", "float32"):
            return self.fp32_tflops
        return self.fp16_tflops_dense or self.bf16_tflops_dense


# ---------------------------------------------------------------------------------------------
# Loading and name resolution
# ---------------------------------------------------------------------------------------------

# Words that carry no identity ("NVIDIA GeForce RTX 4090" == "RTX 4090").
_NOISE = frozenset({
    "nvidia", "geforce", "amd", "radeon", "intel", "tesla", "apple", "gpu", "graphics", "card",
    "generation", "tensor", "core", "edition", "founders", "fe", "the", "r", "tm", "instinct", "habana",
    "accelerator", "with",
})
_SYNONYMS = {"sxm4": "sxm", "sxm5": "sxm", "sxm2": "sxm2", "pci": "pcie", "pcie4": "pcie", "pcie5": "pcie"}


# Compiled once: the index tokenises every spelling in the catalog (~600) on the first lookup.
_CORES_RE = re.compile(r"(\d+)\s*-?\s*core")
_SIZE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:gib|gb|g)\b")
_PUNCT_RE = re.compile(r"[^a-z0-9.]+")


def _tokens(name: str) -> tuple[str, ...]:
    """Normalise a GPU name to identity tokens.

    Lower-case; '76-core' -> '76c'; '24 GB'/'24G'/'24GiB' -> '24gb'; punctuation -> spaces;
    SXM4/SXM5 -> sxm; vendor and filler words dropped.
    """
    s = name.lower()
    if "core" in s:
        s = _CORES_RE.sub(r"\1c", s)
    s = _SIZE_RE.sub(r"\1gb", s)
    s = _PUNCT_RE.sub(" ", s)
    out = []
    for t in s.split():
        t = t.strip(".")
        t = _SYNONYMS.get(t, t)
        if t and t not in _NOISE:
            out.append(t)
    return tuple(out)


class _Index:
    """Precomputed token sets: per entry the union of all spellings, plus each spelling alone."""

    def __init__(self, gpus: list[GPU]) -> None:
        self.gpus = gpus
        self.by_id = {g.id: g for g in gpus}
        self.exact: dict[tuple[str, ...], set[str]] = {}
        self.variants: dict[str, list[frozenset[str]]] = {}
        self.union: dict[str, frozenset[str]] = {}
        for g in gpus:
            spellings = [g.id, g.name, *g.aliases]
            vs = []
            for sp in spellings:
                toks = _tokens(sp)
                self.exact.setdefault(tuple(sorted(toks)), set()).add(g.id)
                vs.append(frozenset(toks))
            self.variants[g.id] = vs
            self.union[g.id] = frozenset().union(*vs)


@lru_cache(maxsize=1)
def load_gpus() -> list[GPU]:
    """All catalog entries from the packaged mlrig/data/gpus.json (parsed once, cached)."""
    import json
    from importlib import resources

    raw = resources.files("mlrig").joinpath("data/gpus.json").read_text(encoding="utf-8")
    return [GPU.model_validate(d) for d in json.loads(raw)]


@lru_cache(maxsize=1)
def _index() -> _Index:
    return _Index(load_gpus())


def gpu_ids() -> list[str]:
    """Catalog ids in catalog order."""
    return [g.id for g in load_gpus()]


def resolve_gpu(name: str) -> GPU:
    """Find the catalog entry a user, shop or `nvidia-smi` name refers to.

    1. An exact spelling (id, name or alias, after normalisation) wins.
    2. Otherwise every entry whose spellings together contain all query tokens is a candidate;
       the candidates whose closest single spelling has the fewest extra tokens win
       ("RTX 4070" -> 4070, not 4070 Ti). Several winners -> AmbiguousNameError ("H100" is
       SXM, PCIe or NVL; "A100" is 40 or 80 GB). Apple names without a GPU core count mean the
       full chip (the catalog aliases '<chip> <N>GB' to the top bin).
       The error lists the candidates' ids.
    3. No candidate -> UnknownNameError listing the closest display names.
    """
    from mlrig.errors import AmbiguousNameError, UnknownNameError

    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise UnknownNameError("GPU", str(name), [], "give a GPU name such as 'RTX 4090'; see `mlrig gpus`")
    idx = _index()
    q = _tokens(name)
    if not q:
        raise UnknownNameError("GPU", name, [], "give a GPU name such as 'RTX 4090'; see `mlrig gpus`")
    hits = idx.exact.get(tuple(sorted(q)))
    if hits and len(hits) == 1:
        return idx.by_id[next(iter(hits))]
    qs = frozenset(q)
    scored: list[tuple[int, str]] = []
    for gid, union in idx.union.items():
        if qs <= union:
            extra = min(len(v - qs) + (0 if qs <= v else 1) for v in idx.variants[gid])
            scored.append((extra, gid))
    if scored:
        best = min(s for s, _ in scored)
        winners = [gid for s, gid in scored if s == best]
        if len(winners) == 1:
            return idx.by_id[winners[0]]
        raise AmbiguousNameError("GPU", name, winners)
    raise UnknownNameError("GPU", name, _candidates(idx, qs, name),
                           "list the catalog with `mlrig gpus --search TEXT`")


def _candidates(idx: _Index, qs: frozenset[str], name: str) -> list[str]:
    """Closest display names (they resolve back): shared tokens plus difflib similarity."""
    import difflib

    qn = " ".join(_tokens(name))
    scored = []
    for g in idx.gpus:
        ratio = difflib.SequenceMatcher(None, qn, " ".join(_tokens(g.name))).ratio()
        scored.append((len(qs & idx.union[g.id]) + ratio, g.name))
    scored.sort(key=lambda t: -t[0])
    return [name for score, name in scored[:5] if score >= 0.4]
