"""Record every tensor allocation and free of a program running on fake tensors (torch imported here).

`Tracker` is a `TorchDispatchMode` pushed above `FakeTensorMode`: it sees each aten op a GPU would
run (forward, the autograd engine's backward ops, optimizer kernels), and the storages the op
returns. A storage it has not seen is an allocation of `nbytes`; a `weakref.finalize` on the
storage records its free when Python drops the last reference, as the CUDA caching allocator would
get it back. Views share their base's storage and cost nothing, as on a GPU.

The log is two flat lists (`handles`, `sizes`): an allocation is (handle, nbytes), a free is
(handle, -1), and a region marker is (-1 - region index, 0). `analyse` replays it through the caching
allocator model and sums live bytes by category at each region's peak.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from mlrig.trace.allocator import CachingAllocator

# categories, in the order they are shown
CATEGORIES = ("parameters", "gradients", "optimizer_state", "optimizer_temporaries", "kv_cache",
              "weight_copies", "activations", "logits_loss", "temporaries")

_CAST_OPS = ("_to_copy", "clone", "to")


class Tracker(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.handles: list[int] = []
        self.sizes: list[int] = []
        self.regions: list[str] = []
        self._live: dict[int, tuple[int, int]] = {}  # id(storage) -> (handle, nbytes)
        self._next = 0
        self.labels: dict[int, str] = {}
        self.paused = False
        self.grad_sizes: set[int] = set()  # byte sizes of trainable parameters' gradients
        self.ops = 0
        self.debug = False
        self.origin: dict[int, str] = {}
        self._op = "setup"

    # -- recording ---------------------------------------------------------------------------
    def region(self, name: str) -> None:
        self.regions.append(name)
        self.handles.append(-len(self.regions))
        self.sizes.append(0)

    def _free(self, key: int, handle: int) -> None:
        entry = self._live.get(key)
        if entry is not None and entry[0] == handle:
            del self._live[key]
        self.handles.append(handle)
        self.sizes.append(-1)

    def see(self, t: torch.Tensor, label: str | None = None) -> int | None:
        """Register `t`'s storage if new; label it (labels set later win). Returns its handle."""
        try:
            st = t.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return None
        key = id(st)
        entry = self._live.get(key)
        nbytes = st.nbytes()
        if entry is not None and entry[1] != nbytes:  # resized in place: a new allocation
            self._free(key, entry[0])
            entry = None
        if entry is None:
            if nbytes == 0:
                return None
            self._next += 1
            handle = self._next
            self._live[key] = (handle, nbytes)
            self.handles.append(handle)
            self.sizes.append(nbytes)
            weakref.finalize(st, self._free, key, handle)
            if self.debug:
                where = self.regions[-1] if self.regions else ""
                self.origin[handle] = f"{self._op} {tuple(t.shape)} {t.dtype} @{where}"
        else:
            handle = entry[0]
        if label is not None:
            self.labels[handle] = label
        return handle

    def handle_of(self, t: torch.Tensor) -> int | None:
        entry = self._live.get(id(t.untyped_storage()))
        return entry[0] if entry else None

    def label_all(self, tensors: Any, label: str) -> None:
        for t in tree_leaves(tensors):
            if isinstance(t, torch.Tensor):
                self.see(t, label)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if self.paused:
            return out
        self.ops += 1
        if self.debug:
            self._op = func.__name__
        copy_of_param = False
        if func.__name__.split(".")[0] in _CAST_OPS and args and isinstance(args[0], torch.Tensor):
            h = self.handle_of(args[0])
            copy_of_param = h is not None and self.labels.get(h) == "parameters"
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.see(t, "weight_copies" if copy_of_param else None)
        return out


@dataclass
class RegionPeak:
    """One region's peak: allocator-counted bytes by category at the moment of the peak."""

    name: str
    peak_allocated: int = 0
    by_category: dict[str, int] = field(default_factory=dict)
    reserved_end: int = 0
    ops: int = 0


def _phase_of(region: str) -> str:
    return region.split(":", 1)[1].split(".", 1)[0] if ":" in region else region.split(".", 1)[0]


def analyse(tr: Tracker, end_of: dict[str, str] | None = None) -> tuple[list[RegionPeak], CachingAllocator]:
    """Replay the log: per region, the allocator's peak allocated bytes and the live bytes by category
    at that peak. Category of an unlabelled allocation: by the region it was made in and whether it
    outlived that phase (forward allocations alive after the forward are activations saved for backward)."""
    handles, sizes, regions = tr.handles, tr.sizes, tr.regions
    # pass 1: region of each allocation, and the log position where it is freed
    alloc_region: dict[int, int] = {}
    sizes_of: dict[int, int] = {}
    freed_at: dict[int, int] = {}
    region_start: list[int] = []
    cur = -1
    for pos, (h, s) in enumerate(zip(handles, sizes, strict=True)):
        if h < 0:
            cur = -h - 1
            region_start.append(pos)
        elif s >= 0:
            alloc_region[h] = cur
            sizes_of[h] = s
        else:
            freed_at[h] = pos
    # where each phase of each step ends (the start of the next phase)
    phase_end: dict[int, int] = {}
    for i, name in enumerate(regions):
        step, phase = name.split(":", 1)[0], _phase_of(name)
        end = len(handles)
        for j in range(i + 1, len(regions)):
            if regions[j].split(":", 1)[0] != step or _phase_of(regions[j]) != phase:
                end = region_start[j]
                break
        phase_end[i] = end

    def category(h: int) -> str:
        lab = tr.labels.get(h)
        if lab is not None:
            return lab
        r = alloc_region.get(h, -1)
        if r < 0:
            return "parameters"
        name = regions[r]
        phase = _phase_of(name)
        if phase == "backward" and sizes_of.get(h) in tr.grad_sizes:
            return "gradients"  # a weight gradient waiting to be summed (tied weights) or accumulated
        if ".head" in name:
            return "logits_loss"
        if phase in ("forward", "prefill"):
            return "activations" if freed_at.get(h, len(handles)) > phase_end[r] else "temporaries"
        if phase == "optimizer":
            return "optimizer_temporaries"
        return "temporaries"

    alloc = CachingAllocator()
    live_cat: dict[str, int] = dict.fromkeys(CATEGORIES, 0)
    block_of: dict[int, tuple[str, int]] = {}
    peaks: list[RegionPeak] = []
    cur_peak: RegionPeak | None = None
    for h, s in zip(handles, sizes, strict=True):
        if h < 0:
            if cur_peak is not None:
                cur_peak.reserved_end = alloc.stats.reserved
            cur_peak = RegionPeak(name=regions[-h - 1], peak_allocated=alloc.stats.allocated,
                                  by_category={k: v for k, v in live_cat.items() if v})
            peaks.append(cur_peak)
            continue
        if tr.labels.get(h) == "host":  # lives in host memory on a real run (optimizer step counters)
            continue
        if s >= 0:
            block = alloc.malloc(h, s)
            cat = category(h)
            block_of[h] = (cat, block)
            live_cat[cat] = live_cat.get(cat, 0) + block
            if cur_peak is not None and alloc.stats.allocated > cur_peak.peak_allocated:
                cur_peak.peak_allocated = alloc.stats.allocated
                cur_peak.by_category = {k: v for k, v in live_cat.items() if v}
        elif h in block_of:
            cat, block = block_of.pop(h)
            live_cat[cat] -= block
            alloc.free(h)
    if cur_peak is not None:
        cur_peak.reserved_end = alloc.stats.reserved
    return peaks, alloc


__all__ = ["CATEGORIES", "RegionPeak", "Tracker", "analyse"]
