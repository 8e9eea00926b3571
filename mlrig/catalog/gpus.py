"""Accelerator catalog: memory, bandwidth and dense tensor rates, each entry with its source.

Data lives in `mlrig/data/gpus.json` (built from scripts/data/accelerators_reference.csv
plus the cards users ask about that it lacks). Figures are *dense* tensor rates with FP32
accumulate (GeForce cards run FP16/BF16/FP8 at half rate with FP32 accumulate; vendors often
quote 2:4-sparse figures, which we never use).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

if TYPE_CHECKING:
    from mlrig.workload import HardwareSpec

HardwareClass = Literal["geforce", "workstation", "datacenter", "apple", "amd", "intel", "tpu", "cpu", "other"]


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
    # streaming multiprocessors (NVIDIA's whitepapers): how many thread blocks run at once where a kernel's tile
    # schedule puts one block per SM (performance.mlc_gemm_wave_util); None where not recorded
    sm_count: int | None = Field(None, gt=0)
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    nvlink: str | None = None  # e.g. "NVLink 4, 900 GB/s total" or None
    nvlink_gb_s: float | None = None  # per-direction GPU-to-GPU bandwidth where NVLink exists
    # bridged PCIe cards link only pairs (A100/H100 PCIe, RTX 3090, A6000) or fours (H200 NVL): beyond this
    # many GPUs the tensor-parallel ring crosses PCIe. None: every GPU of the node is on the fabric (SXM/OAM).
    nvlink_max_gpus: int | None = Field(None, ge=2)
    form_factor: str | None = None
    slots: float | None = None
    launch_price_usd: float | None = None
    # boards software sees as several GPUs (K80, MI250X): all figures are per device
    devices_per_board: int | None = None
    # CPU-only hosts (hardware_class "cpu"): physical cores llama.cpp's threads run on
    cpu_cores: int | None = None

    source: str  # primary source URL(s)
    source_date: str  # when the figures were taken, ISO date
    verification: str | None = None
    notes: str | None = None
    # How the name given resolved (an assumed variant, a custom spec): set by the resolver on a copy,
    # never stored in the catalog; the planner shows them with the plan's notes.
    resolution_notes: list[str] = []

    @property
    def capacity_gib(self) -> float:
        """Memory a workload may plan against."""
        return self.usable_memory_gib or self.memory_gib

    def tensor_tflops(self, dtype: str) -> float | None:
        """Dense tensor rate for the compute dtype (int8: TOPS); falls back to FP16 for BF16-less parts and parts
        without an int8 figure (None for FP4 on a part without an FP4 rate)."""
        d = dtype.lower()
        if d in ("fp4", "nvfp4", "e2m1"):
            return self.fp4_tflops_dense
        if d in ("fp8", "e4m3", "e5m2"):
            return self.fp8_tflops_dense or self.fp16_tflops_dense
        if d in ("bf16", "bfloat16"):
            return self.bf16_tflops_dense or self.fp16_tflops_dense
        if d in ("fp32", "float32"):
            return self.fp32_tflops
        if d == "int8":
            return self.int8_tops_dense or self.fp16_tflops_dense or self.bf16_tflops_dense
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
_SYNONYMS = {"sxm4": "sxm", "sxm5": "sxm", "sxm2": "sxm2", "sxm3": "sxm3", "pci": "pcie", "pcie4": "pcie",
             "pcie5": "pcie", "laptop": "laptop", "mobile": "laptop", "notebook": "laptop", "max+": "max", "pro": "pro"}


# Compiled once: the index tokenises every spelling in the catalog (~860) on the first lookup.
_CORES_RE = re.compile(r"(\d+)\s*-?\s*core")
_SIZE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:gib|gb|g)\b")
_WORD_RE = re.compile(r"[a-z0-9.]+")
# Letter/digit boundaries inside a token ('rtx4090', '3090ti', 'mi300x'); size and core-count tokens
# ('24gb', '76c') stay whole.
_SPLIT_RE = re.compile(r"(?<=[a-z])(?=\d)|(?<=\d)(?=[a-z])")
_KEEP_RE = re.compile(r"\d+(?:\.\d+)?gb|\d+c")


def _tokens(name: str) -> tuple[str, ...]:
    """Normalise a GPU name to identity tokens.

    Lower-case; '76-core' -> '76c'; '24 GB'/'24G'/'24GiB' -> '24gb'; punctuation -> spaces;
    SXM4/SXM5 -> sxm (SXM2/SXM3 kept: two V100 boards); letters and digits split ('rtx4090' -> rtx 4090,
    '3090ti' -> 3090 ti, 'MI300X' -> mi 300 x); vendor and filler words dropped.
    """
    s = name.lower()
    # replacement functions, not r"\1gb" templates: re expands a template in Python on every call
    if "core" in s:
        s = _CORES_RE.sub(lambda m: m[1] + "c", s)
    if "g" in s:  # every size spelling (gib, gb, g) has one
        s = _SIZE_RE.sub(lambda m: m[1] + "gb", s)
    out: list[str] = []
    for word in _WORD_RE.findall(s):  # punctuation separates words
        parts = _WORD_TOKENS.get(word)
        if parts is None:
            parts = _word_tokens(word)
            if len(_WORD_TOKENS) < _WORD_CACHE_MAX:
                _WORD_TOKENS[word] = parts
        out += parts
    return tuple(out)


# The catalog's ~860 spellings share a few hundred words: each word's tokens are worked out once
# (half the cost of indexing the catalog, which every `mlrig plan` pays). Bounded, so that a long-running
# `mlrig web` looking up arbitrary names cannot grow it without limit.
_WORD_TOKENS: dict[str, tuple[str, ...]] = {}
_WORD_CACHE_MAX = 4096
_WHOLE_TOKENS = frozenset(_SYNONYMS.values())
# SXM board generations kept apart (V100 came as SXM2 and SXM3; A100/H100 have one, folded into "sxm")
_SXM_GENERATIONS = frozenset({"sxm2", "sxm3"})


def _word_tokens(word: str) -> tuple[str, ...]:
    """The tokens of one word, a run of a-z, 0-9 and '.' (see `_tokens`)."""
    t = word.strip(".")
    t = _SYNONYMS.get(t, t)
    parts = [t] if (t in _WHOLE_TOKENS or _KEEP_RE.fullmatch(t)) else _SPLIT_RE.split(t)
    return tuple(p for p in (part.strip(".") for part in parts) if p and p not in _NOISE)


class _Index:
    """Precomputed token sets: per entry the union of all spellings, plus each spelling alone.

    Entries may be given as raw catalog dicts: each is validated into a `GPU` on first use
    (`gpu`), so a lookup builds the entry it returns, not the whole catalog."""

    def __init__(self, entries: Sequence[GPU | dict[str, Any]]) -> None:
        self._entries: dict[str, GPU | dict[str, Any]] = {}
        self.names: dict[str, str] = {}  # id -> display name, in catalog order
        self.exact: dict[tuple[str, ...], set[str]] = {}
        self.variants: dict[str, list[frozenset[str]]] = {}
        self.union: dict[str, frozenset[str]] = {}
        for e in entries:
            gid, name, aliases = ((e.id, e.name, e.aliases) if isinstance(e, GPU)
                                  else (e["id"], e["name"], e.get("aliases", [])))
            if gid in self._entries:  # the shipped catalog's ids are unique (tests/test_gpus.py); keep it so
                raise ValueError(f"GPU catalog: duplicate id {gid!r}")
            self._entries[gid] = e
            self.names[gid] = name
            vs = []
            for sp in (gid, name, *aliases):
                toks = _tokens(sp)
                self.exact.setdefault(tuple(sorted(toks)), set()).add(gid)
                vs.append(frozenset(toks))
            self.variants[gid] = vs
            union = frozenset().union(*vs)
            # "V100 SXM" names both V100 boards (SXM2 16/32 GB, SXM3 32 GB): plain "sxm" is a candidate's token
            # too, so the lookup lists them instead of missing SXM2 (and taking SXM3 as the only "sxm")
            self.union[gid] = union | {"sxm"} if union & _SXM_GENERATIONS else union

    def __contains__(self, gid: str) -> bool:
        return gid in self._entries

    def gpu(self, gid: str) -> GPU:
        """The entry with this id (validated on first use, then kept)."""
        e = self._entries[gid]
        if not isinstance(e, GPU):
            e = self._entries[gid] = GPU.model_validate(e)
        return e

    def all(self) -> list[GPU]:
        """Every entry, validated, in catalog order."""
        return [self.gpu(gid) for gid in self._entries]


@lru_cache(maxsize=1)
def _builtin_index() -> _Index:
    """The packaged catalog, mlrig/data/gpus.json, parsed once and indexed from the raw entries."""
    import json
    from importlib import resources

    raw = resources.files("mlrig").joinpath("data/gpus.json").read_text(encoding="utf-8")
    return _Index(json.loads(raw))


@lru_cache(maxsize=1)
def builtin_gpus() -> list[GPU]:
    """The packaged catalog, every entry validated (the same objects `resolve_gpu` returns)."""
    return _builtin_index().all()


def load_gpus() -> list[GPU]:
    """All catalog entries: the packaged catalog, then the user's gpus.toml (see `user_gpus_path`);
    a user entry with a built-in id replaces that entry."""
    sig = _user_file_signature()
    return _all_gpus(sig)


@lru_cache(maxsize=4)
def _all_gpus(sig: tuple[str, int, int] | None) -> list[GPU]:
    builtin = builtin_gpus()
    if sig is None:
        return builtin
    from mlrig.errors import MlrigError

    try:
        user = load_user_gpus(Path(sig[0]))
    except MlrigError as exc:
        # an optional file: a fault in it is a one-line warning (once per version of the file: this is cached by
        # its signature) and the built-in catalog answers; a typo there made every `plan` exit 2
        import sys

        problem = str(exc).replace(f"GPU catalog {sig[0]!r}: ", "").replace(f"GPU catalog {sig[0]!r} ", "")
        problem = problem.removeprefix(f"{sig[0]} ").removeprefix("is ").rsplit("; fix", 1)[0]
        print(f"mlrig: warning: ignoring {sig[0]} ({problem}); built-in GPU catalog used: fix or remove that file",
              file=sys.stderr)
        return builtin
    ids = {g.id for g in user}
    return [g for g in builtin if g.id not in ids] + user


@lru_cache(maxsize=4)
def _index_for(sig: tuple[str, int, int] | None) -> _Index:
    return _builtin_index() if sig is None else _Index(_all_gpus(sig))


def _index() -> _Index:
    return _index_for(_user_file_signature())


def gpu_ids() -> list[str]:
    """Catalog ids in catalog order."""
    return [g.id for g in load_gpus()]


# Names that mean one product although the tokens alone do not say so.
_CPU_NOTE = ("'{name}' read as {gname}: {gib:g} GiB of host RAM at {bw:g} GB/s, {cores} cores; other hosts: "
             "cpu-ddr4-2ch, cpu-epyc-genoa-12ch, cpu-xeon-spr-8ch, or your own figures with "
             "--gpu-spec memory_gib=...,bandwidth_gb_s=...,fp32_tflops=...,hardware_class=cpu")
_NAME_ALIASES: dict[str, tuple[str, str | None]] = {
    "mi300": ("mi300x", "'{name}' read as the MI300X (the MI300A is an APU sold only inside systems)"),
    "h100 96gb": ("gh200-96gb", "'{name}': the 96 GB HBM3 H100 ships in the GH200 Grace Hopper superchip (read as "
                  "gh200-96gb); the H100 NVL card has 94 GB (h100-nvl-94gb), H100 SXM/PCIe 80 GB"),
    "cpu": ("cpu-ddr5-2ch", _CPU_NOTE), "cpu only": ("cpu-ddr5-2ch", _CPU_NOTE),
    "no gpu": ("cpu-ddr5-2ch", _CPU_NOTE), "host": ("cpu-ddr5-2ch", _CPU_NOTE),
}


@lru_cache(maxsize=1)
def _alias_tokens() -> dict[tuple[str, ...], tuple[str, str | None]]:
    return {_tokens(k): v for k, v in _NAME_ALIASES.items()}


# When a name fits several variants of the same memory size, the most common one is assumed (with a
# note naming the others' differing figures). Ordered: the first listed among the winners is taken.
# SXM boards outsell PCIe cards in the clouds and clusters where these GPUs are rented (the SXM rows
# dominate MLPerf and cloud instance lists); the RTX PRO 6000 workstation card outsells the server one.
PREFERRED_VARIANTS: tuple[str, ...] = (
    "h100-sxm-80gb", "a100-sxm-80gb", "a100-sxm-40gb", "h200-sxm-141gb", "h800-sxm-80gb", "a800-sxm-80gb",
    "b200-180gb", "rtx-pro-6000-blackwell", "l40s", "gb200-186gb",
)
_SAME_MEMORY_REL = 0.03  # variants whose capacities differ by less than this "do not change" a fit answer


# The fix an unknown GPU's error names: the catalog, or the card's own figures (GpuSpec) where a plan is priced
UNKNOWN_GPU_HINT = ("list the catalog with `mlrig gpus --search TEXT`; for a card it lacks, give its figures in "
                    "place of --gpu: --gpu-spec memory_gib=<GiB>,bandwidth_gb_s=<GB/s>,fp16_tflops=<TFLOPS> with "
                    "plan, fit, compare or serve, or a plan file's [hardware.gpu_spec]")


def resolve_gpu(name: str) -> GPU:
    """Find the catalog entry a user, shop or `nvidia-smi` name refers to.

    1. An exact spelling (id, name or alias, after normalisation) wins.
    2. Otherwise every entry whose spellings together contain all query tokens is a candidate;
       the candidates whose closest single spelling has the fewest extra tokens win
       ("RTX 4070" -> 4070, not 4070 Ti).
    3. Several winners with the same memory (within 3 %) and one of them in PREFERRED_VARIANTS:
       that one, with a note (in `resolution_notes`) naming the other variants and the figures in
       which they differ ("A100 80GB" -> SXM, note: PCIe has 1,935 GB/s). Several winners whose
       memory differs (bare "H100": 80 or 94 GB; "A100": 40 or 80 GB) -> AmbiguousNameError listing
       their ids: a fit answer would depend on the guess. Apple names without a GPU core count mean
       the full chip (the catalog aliases '<chip> <N>GB' to the top bin).
    4. No candidate -> UnknownNameError listing the closest display names.
    """
    from mlrig.errors import AmbiguousNameError, UnknownNameError

    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise UnknownNameError("GPU", str(name), [], "give a GPU name such as 'RTX 4090'; see `mlrig gpus`")
    if re.fullmatch(r"\s*-?\d+\s*(?:x|×|\*)\s*", name, re.IGNORECASE):  # '2x': a count with no GPU after it
        raise UnknownNameError("GPU", name, [], f"a count needs its GPU: give e.g. '{name.strip()} RTX 3090'")
    idx = _index()
    q = _tokens(name)
    if not q:
        raise UnknownNameError("GPU", name, [], "give a GPU name such as 'RTX 4090'; see `mlrig gpus`")
    alias = _alias_tokens().get(q)
    if alias and alias[0] in idx:
        g = idx.gpu(alias[0])
        if alias[1] is None:
            return g
        note = alias[1].format(name=name, gname=g.name, gib=g.capacity_gib, bw=g.memory_bandwidth_gb_s,
                               cores=g.cpu_cores)
        return g.model_copy(update={"resolution_notes": [note]})
    hits = idx.exact.get(tuple(sorted(q)))
    if hits and len(hits) == 1:
        return idx.gpu(next(iter(hits)))
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
            return idx.gpu(winners[0])
        chosen = _default_variant([idx.gpu(w) for w in winners])
        if chosen is not None:
            return chosen.model_copy(update={"resolution_notes": [
                _variant_note(name, chosen, [idx.gpu(w) for w in winners if w != chosen.id])]})
        raise AmbiguousNameError("GPU", name, winners, _memory_spellings(name, [idx.gpu(w) for w in winners]),
                                 described=[f"{w} ({idx.names[w]})" for w in winners])
    counted = split_gpu_count(name)
    if counted is not None:  # '8x A100 80GB': a count and a GPU, where a plan takes the count apart
        n, rest = counted
        from mlrig.errors import MlrigError

        try:
            resolve_gpu(rest)
        except MlrigError as exc:  # '2x RTX 4099': the suggestions for 'RTX 4099', not for the whole text
            raise MlrigError(f"{exc} (the GPU of {name!r})") from None
        else:
            raise MlrigError(f"GPU {name!r} holds a count: give --gpu '{rest}' -n {n} (hardware.count = {n})")
    odd = re.match(r"^\s*(-?\d+)\s*(?:x|×|\*)\s*(\S.*)$", name, re.IGNORECASE)
    if odd is not None:  # '0x RTX 4090', '-2x ...', '999999x ...': a count no machine has, before a GPU name
        from mlrig.errors import MlrigError

        try:
            resolve_gpu(odd.group(2))
        except MlrigError:
            pass
        else:
            raise MlrigError(f"GPU {name!r}: {odd.group(1)} is no GPU count; give 1 to 99999, e.g. "
                             f"'2x {odd.group(2).strip()}'")
    raise UnknownNameError("GPU", name, _candidates(idx, qs, name), UNKNOWN_GPU_HINT)


_COUNT_RE = re.compile(r"^\s*(\d{1,5})\s*(?:x|×|\*)\s*(\S.*)$", re.IGNORECASE)


def split_gpu_count(name: str) -> tuple[int, str] | None:
    """'8x A100 80GB', '2 × RTX 3090', '4*H100' -> (count, GPU name), as people and `recommend --have` write a
    multi-GPU setup; None when the name does not start with a count."""
    m = _COUNT_RE.match(name)
    if m is None or int(m.group(1)) < 1:
        return None
    return int(m.group(1)), m.group(2).strip()


def _memory_spellings(name: str, cands: list[GPU]) -> list[str] | None:
    """'M2 Max 32GB', 'M2 Max 64GB', ... for variants that differ in memory: the name as given with each marketed
    size, when each such spelling resolves to a variant of that size ('H100 80GB': the SXM one, with its note);
    else None (the ids are listed)."""
    from mlrig.errors import MlrigError

    out: list[str] = []
    for g in sorted(cands, key=lambda g: g.memory_gib):
        marked = re.search(r"(\d+)gb$", g.id)  # the id's marketed size ('apple-m2-max-38c-64gb'), else GiB
        typed = f"{name.strip()} {marked.group(1) if marked else round(g.memory_gib)}GB"
        if typed in out:
            continue
        try:
            got = resolve_gpu(typed)
        except MlrigError:
            return None
        if got.id not in {c.id for c in cands} or abs(got.memory_gib - g.memory_gib) > g.memory_gib * _SAME_MEMORY_REL:
            return None
        out.append(typed)
    return out if len(out) > 1 else None


def _default_variant(cands: list[GPU]) -> GPU | None:
    """The most common variant when all candidates hold the same memory, else None."""
    caps = [g.capacity_gib for g in cands]
    if max(caps) > min(caps) * (1 + _SAME_MEMORY_REL):
        return None
    by_id = {g.id: g for g in cands}
    return next((by_id[i] for i in PREFERRED_VARIANTS if i in by_id), None)


def _variant_note(name: str, chosen: GPU, others: list[GPU]) -> str:
    """'A100 80GB' is one of several variants: which was assumed, and how the others differ."""
    def fig(g: GPU) -> list[tuple[str, float | None, str]]:
        return [("memory bandwidth", g.memory_bandwidth_gb_s, "GB/s"),
                ("BF16 dense", g.bf16_tflops_dense or g.fp16_tflops_dense, "TFLOPS"),
                ("NVLink", g.nvlink_gb_s, "GB/s per direction"), ("power", g.tdp_w, "W")]

    diffs = []
    for o in others:
        parts = [f"{label} {v:,.0f} {unit} (vs {c:,.0f})" if v is not None and c is not None else
                 f"{label} {'none' if v is None else f'{v:,.0f} {unit}'} (vs {'none' if c is None else f'{c:,.0f}'})"
                 for (label, v, unit), (_, c, _) in zip(fig(o), fig(chosen), strict=True) if v != c]
        diffs.append(f"{o.name} ({o.id}): " + (", ".join(parts) if parts else "same figures"))
    return (f"GPU {name!r} could be {len(others) + 1} variants with the same memory ({chosen.capacity_gib:.1f} GiB): "
            f"assumed {chosen.name} ({chosen.id}), the most common; memory answers hold for all, speed differs - "
            + "; ".join(diffs) + ". Name the variant to choose it")


# ---------------------------------------------------------------------------------------------
# Custom accelerators: --gpu-spec, a plan's [hardware.gpu_spec], and the user's gpus.toml
# ---------------------------------------------------------------------------------------------

class GpuSpec(BaseModel):
    """Figures of an accelerator the catalog lacks (or replacements for a catalog entry's figures).

    Same keys on the command line (`--gpu-spec memory_gib=32,bandwidth_gb_s=1792,bf16_tflops=209`),
    in a plan (`[hardware.gpu_spec]`) and in the user's gpus.toml. Rates are dense (no 2:4 sparsity)."""

    model_config = ConfigDict(extra="forbid")

    memory_gib: float | None = Field(None, gt=0, le=1e6, description="device memory, GiB (2^30 bytes)")
    bandwidth_gb_s: float | None = Field(None, gt=0, le=1e6, description="memory bandwidth, 10^9 bytes/s")
    bf16_tflops: float | None = Field(None, gt=0, le=1e6, description="dense BF16 tensor rate")
    fp16_tflops: float | None = Field(None, gt=0, le=1e6, description="dense FP16 tensor rate (FP32 accumulate)")
    fp8_tflops: float | None = Field(None, gt=0, le=1e6)
    fp4_tflops: float | None = Field(None, gt=0, le=1e6)
    int8_tops: float | None = Field(None, gt=0, le=1e6)
    fp32_tflops: float | None = Field(None, gt=0, le=1e6)
    usable_memory_gib: float | None = Field(None, gt=0, le=1e6)
    tdp_w: float | None = Field(None, gt=0, le=1e6)
    nvlink_gb_s: float | None = Field(None, gt=0, le=1e6, description="GPU-to-GPU, per direction")
    pcie_gen: int | None = Field(None, ge=1, le=9)
    hardware_class: HardwareClass | None = None
    memory_type: str | None = Field(None, max_length=100)
    name: str | None = Field(None, max_length=200)

    def gpu_fields(self) -> dict[str, Any]:
        """The GPU fields this spec sets."""
        return {_SPEC_TO_GPU.get(k, k): v for k, v in self.model_dump(exclude_none=True).items()}


GPU_SPEC_KEYS = tuple(GpuSpec.model_fields)
# spec key -> GPU field, where the names differ (the spec uses the shorter names people type)
_SPEC_TO_GPU = {"bandwidth_gb_s": "memory_bandwidth_gb_s", "bf16_tflops": "bf16_tflops_dense",
                "fp16_tflops": "fp16_tflops_dense", "fp8_tflops": "fp8_tflops_dense",
                "fp4_tflops": "fp4_tflops_dense", "int8_tops": "int8_tops_dense"}


def parse_gpu_spec(text: str, where: str = "--gpu-spec") -> GpuSpec:
    """'memory_gib=32,bandwidth_gb_s=1792,bf16_tflops=209' -> GpuSpec; one-line MlrigError otherwise."""
    from mlrig.errors import MlrigError

    if not isinstance(text, str) or not text.strip() or len(text) > 2000:
        raise MlrigError(f"{where}: give KEY=VALUE pairs, e.g. memory_gib=32,bandwidth_gb_s=1792,bf16_tflops=209")
    data: dict[str, Any] = {}
    for part in (x.strip() for x in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not sep or not value.strip():
            raise MlrigError(f"{where}: {part!r} is not KEY=VALUE; e.g. memory_gib=32,bandwidth_gb_s=1792")
        if key not in GPU_SPEC_KEYS:
            raise MlrigError(f"{where}: unknown key {key!r}; use {', '.join(GPU_SPEC_KEYS)}")
        data[key] = value.strip()
    return gpu_spec_from_dict(data, where)


def gpu_spec_from_dict(data: Any, where: str) -> GpuSpec:
    """Validate a spec table (plan, gpus.toml or parsed flag); one-line MlrigError naming the key."""
    from mlrig.errors import MlrigError

    if isinstance(data, GpuSpec):
        return data
    if not isinstance(data, dict):
        raise MlrigError(f"{where}: must be a table of KEY = VALUE ({', '.join(GPU_SPEC_KEYS)})")
    for k, v in data.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise MlrigError(f"{where}: {k} must be a finite number (got {v})")
    try:
        return GpuSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(x) for x in err["loc"])
        if err["type"] == "extra_forbidden":
            raise MlrigError(f"{where}: unknown key {key!r}; use {', '.join(GPU_SPEC_KEYS)}") from None
        raise MlrigError(f"{where}: {key}: {err['msg']} (got {err.get('input')!r})") from None


def gpu_from_spec(spec: GpuSpec, base: GPU | None = None, *, source: str = "--gpu-spec",
                  gid: str | None = None) -> GPU:
    """A GPU from a spec: `base`'s figures replaced by the spec's, or a new device from the spec alone
    (then memory_gib, bandwidth_gb_s and bf16_tflops or fp16_tflops are required)."""
    from mlrig.errors import MlrigError

    fields = spec.gpu_fields()
    if base is not None:
        changed = ", ".join(f"{k}={v}" for k, v in spec.model_dump(exclude_none=True).items())
        notes = [*base.resolution_notes, f"{base.id} with figures from {source}: {changed}"]
        return base.model_copy(update={**fields, "resolution_notes": notes,
                                       "source": f"{base.source} ; overridden by {source}"})
    missing = [k for k in ("memory_gib", "bandwidth_gb_s") if getattr(spec, k) is None]
    if spec.bf16_tflops is None and spec.fp16_tflops is None and spec.hardware_class != "cpu":
        missing.append("bf16_tflops (or fp16_tflops)")
    if missing:
        raise MlrigError(f"{source}: a custom accelerator needs {', '.join(missing)} "
                         "(e.g. memory_gib=32,bandwidth_gb_s=1792,bf16_tflops=209), or name a catalog GPU too")
    name = fields.pop("name", None) or "custom accelerator"
    fields.setdefault("hardware_class", "other")
    if fields.get("bf16_tflops_dense") is None:
        fields["bf16_tflops_dense"] = fields.get("fp16_tflops_dense")
    if fields.get("fp16_tflops_dense") is None:
        fields["fp16_tflops_dense"] = fields.get("bf16_tflops_dense")
    import datetime

    return GPU(id=gid or "custom", name=name, vendor="custom", source=source,
               source_date=datetime.date.today().isoformat(), verification="user-supplied figures",
               resolution_notes=[f"custom accelerator from {source}: {name}, {spec.memory_gib:g} GiB, "
                                 f"{spec.bandwidth_gb_s:g} GB/s"], **fields)


def resolve_hardware_gpu(name: str | None, spec: GpuSpec | dict[str, Any] | str | None = None) -> GPU:
    """The planner's one call: a catalog name, a custom spec, or a catalog name with spec overrides."""
    if spec is None or spec == {}:
        if name is None:
            from mlrig.errors import MlrigError

            raise MlrigError("give a GPU name (--gpu) or its figures (--gpu-spec memory_gib=...,bandwidth_gb_s=...)")
        return resolve_gpu(name)
    s = parse_gpu_spec(spec) if isinstance(spec, str) else gpu_spec_from_dict(spec, "hardware.gpu_spec")
    base = resolve_gpu(name) if name is not None else None
    return gpu_from_spec(s, base, source="--gpu-spec / hardware.gpu_spec")


def resolve_plan_hardware(hw: HardwareSpec) -> GPU:
    """The GPU of a plan's [hardware]: `gpu` by name, `gpu_spec` alone (a custom device; the default
    gpu name is ignored then), or both (the named GPU with the spec's figures)."""
    name = hw.gpu if hw.gpu_spec is None or "gpu" in hw.model_fields_set else None
    return resolve_hardware_gpu(name, hw.gpu_spec)


def user_gpus_path() -> Path:
    """The user's catalog additions: $XDG_CONFIG_HOME/mlrig/gpus.toml (default ~/.config/mlrig/gpus.toml),
    where prices.toml lives too."""
    return _user_gpus_path_for(os.environ.get("XDG_CONFIG_HOME"), os.environ.get("HOME"))


@lru_cache(maxsize=8)
def _user_gpus_path_for(xdg_config_home: str | None, home: str | None) -> Path:
    """The path for these environment values (`Path.home()` reads HOME; asked on every plan)."""
    base = xdg_config_home or str(Path.home() / ".config")
    return Path(base) / "mlrig" / "gpus.toml"


def _user_file_signature() -> tuple[str, int, int] | None:
    """(path, mtime, size) of the user's gpus.toml, None without one: looked at on every resolution,
    so an edit is seen by the next plan (the path built once per call, one stat)."""
    path = str(user_gpus_path())
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_mtime_ns, st.st_size)


_USER_EXTRA_KEYS = ("base", "aliases", "source", "vendor", "id")
_ID_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def load_user_gpus(path: Path) -> list[GPU]:
    """Entries of a user gpus.toml: one table per accelerator, keyed by its id.

        [my-5090-oc]                      # id: lower case, digits, . _ -
        name = "RTX 5090 (overclocked)"
        base = "rtx-5090"                 # optional: start from a catalog entry
        bandwidth_gb_s = 1950             # any GpuSpec key (see `--gpu-spec`)
        aliases = ["my card"]
        source = "my measurement, 2026-11"

    Without `base`, memory_gib, bandwidth_gb_s and bf16_tflops (or fp16_tflops) are required.
    Errors name the file and the entry in one line.
    """
    from mlrig.errors import MlrigError
    from mlrig.userfiles import load_toml

    where = str(path)
    # the shared loader: a regular file only, size-capped, huge integers / deep nesting / inf refused
    data = load_toml(path, "GPU catalog", max_bytes=1_000_000)
    out: list[GPU] = []
    for gid, table in data.items():
        entry = f"{where} [{gid}]"
        if not isinstance(table, dict):
            raise MlrigError(f"{entry}: each accelerator is a table ([my-gpu] then KEY = VALUE lines)")
        if not _ID_RE.fullmatch(gid):
            raise MlrigError(f"{entry}: ids are lower-case letters, digits, '.', '_' or '-'")
        extra = {k: table[k] for k in _USER_EXTRA_KEYS if k in table}
        spec = gpu_spec_from_dict({k: v for k, v in table.items() if k not in _USER_EXTRA_KEYS}, entry)
        aliases = extra.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise MlrigError(f"{entry}: aliases must be a list of strings")
        source = str(extra.get("source") or f"user catalog {where}")
        if "base" in extra:
            base = next((g for g in builtin_gpus() if g.id == extra["base"]), None)
            if base is None:
                raise MlrigError(f"{entry}: base {extra['base']!r} is not a catalog id; see `mlrig gpus`")
            g = gpu_from_spec(spec, base, source=source).model_copy(
                update={"id": gid, "name": spec.name or f"{base.name} ({gid})", "resolution_notes": [],
                        "aliases": aliases, "source": f"{source} (from {base.id}: {base.source})"})
        else:
            g = gpu_from_spec(spec, source=entry, gid=gid).model_copy(
                update={"aliases": aliases, "source": source, "resolution_notes": [],
                        "vendor": str(extra.get("vendor", "custom"))})
        out.append(g)
    return out


def _candidates(idx: _Index, qs: frozenset[str], name: str) -> list[str]:
    """Closest display names (they resolve back): shared tokens plus difflib similarity."""
    import difflib

    qn = " ".join(_tokens(name))
    scored = []
    for gid, gname in idx.names.items():
        ratio = difflib.SequenceMatcher(None, qn, " ".join(_tokens(gname))).ratio()
        scored.append((len(qs & idx.union[gid]) + ratio, gname))
    scored.sort(key=lambda t: -t[0])
    return [name for score, name in scored[:5] if score >= 0.4]
