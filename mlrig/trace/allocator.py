"""A model of PyTorch's CUDA caching allocator: what `torch.cuda.memory_allocated()` and
`memory_reserved()` would report for a sequence of tensor allocations and frees.

Fake tensors give exact tensor sizes and lifetimes, but a GPU shows more than their sum: the caching
allocator rounds every request up, carves requests out of larger segments it obtained with
`cudaMalloc`, and keeps freed blocks cached instead of returning them. This module replays an
alloc/free sequence through the same rules as `c10/cuda/CUDACachingAllocator.cpp` (PyTorch 2.x,
default settings: no `expandable_segments`, no `max_split_size_mb`, no `roundup_power2_divisions`):

- requests are rounded up to a multiple of 512 bytes (`kMinBlockSize`, `round_size`);
- requests of at most 1 MiB (`kSmallSize`) come from the small pool, whose segments are 2 MiB
  (`kSmallBuffer`); larger requests come from the large pool, whose new segments are 20 MiB
  (`kLargeBuffer`) for requests under 10 MiB (`kMinLargeAlloc`), else the request rounded up to
  2 MiB (`kRoundLarge`) (`get_allocation_size`);
- a request takes the smallest cached free block of its pool that is large enough (best fit,
  `get_free_block`); only when none exists does the allocator `cudaMalloc` a new segment;
- a block is split when what remains is at least 512 bytes (small pool) or more than 1 MiB
  (large pool) (`should_split`); otherwise the whole block is handed out, and PyTorch's
  `allocated_bytes` statistic counts the whole block;
- freed blocks merge with free neighbours of the same segment and stay cached (reserved).

It models one device and one stream, and a GPU with room to spare: when a real `cudaMalloc` fails,
the allocator frees its cached unsplit segments and retries, so close to capacity the real reserved
figure can be lower than this one (never the allocated figure).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

MIN_BLOCK = 512  # kMinBlockSize
SMALL_SIZE = 1 << 20  # kSmallSize: largest "small" request, 1 MiB
SMALL_BUFFER = 2 << 20  # kSmallBuffer: small-pool segment, 2 MiB
LARGE_BUFFER = 20 << 20  # kLargeBuffer: large-pool segment for requests under kMinLargeAlloc
MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc
ROUND_LARGE = 2 << 20  # kRoundLarge


def round_size(nbytes: int) -> int:
    """`round_size`: a request rounded up to a multiple of 512 bytes (512 at least)."""
    if nbytes < MIN_BLOCK:
        return MIN_BLOCK
    return MIN_BLOCK * ((nbytes + MIN_BLOCK - 1) // MIN_BLOCK)


def segment_size(size: int) -> int:
    """`get_allocation_size`: the `cudaMalloc` size of a new segment for a rounded request."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((size + ROUND_LARGE - 1) // ROUND_LARGE)


@dataclass(eq=False)
class _Block:
    segment: int
    offset: int
    size: int
    small: bool
    free: bool = True
    prev: _Block | None = None
    next: _Block | None = None

    def key(self) -> tuple[int, int, int]:
        return (self.size, self.segment, self.offset)


@dataclass
class AllocatorStats:
    """Current and peak figures, in bytes, as `torch.cuda.memory_stats()` names them."""

    allocated: int = 0  # allocated_bytes.all.current: sizes of the blocks handed out
    reserved: int = 0  # reserved_bytes.all.current: sizes of the segments obtained with cudaMalloc
    requested: int = 0  # requested_bytes.all.current: the sizes asked for, unrounded
    peak_allocated: int = 0
    peak_reserved: int = 0
    peak_requested: int = 0
    segments: int = 0


@dataclass
class CachingAllocator:
    """Replays allocations (`malloc(handle, nbytes)`) and frees (`free(handle)`)."""

    stats: AllocatorStats = field(default_factory=AllocatorStats)
    _pools: dict[bool, list[tuple[int, int, int]]] = field(default_factory=lambda: {True: [], False: []})
    _free_blocks: dict[tuple[int, int, int], _Block] = field(default_factory=dict)
    _live: dict[int, tuple[_Block, int]] = field(default_factory=dict)

    def _insert_free(self, block: _Block) -> None:
        block.free = True
        k = block.key()
        bisect.insort(self._pools[block.small], k)
        self._free_blocks[k] = block

    def _remove_free(self, block: _Block) -> None:
        k = block.key()
        pool = self._pools[block.small]
        i = bisect.bisect_left(pool, k)
        del pool[i]
        del self._free_blocks[k]
        block.free = False

    def malloc(self, handle: int, nbytes: int) -> int:
        """Allocate; returns the bytes the allocator counts as allocated for this request."""
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        pool = self._pools[small]
        i = bisect.bisect_left(pool, (size, -1, -1))
        if i < len(pool):
            block = self._free_blocks[pool[i]]
            self._remove_free(block)
        else:
            seg_bytes = segment_size(size)
            self.stats.segments += 1
            block = _Block(segment=self.stats.segments, offset=0, size=seg_bytes, small=small, free=False)
            self.stats.reserved += seg_bytes
            self.stats.peak_reserved = max(self.stats.peak_reserved, self.stats.reserved)
        remaining = block.size - size
        if (remaining >= MIN_BLOCK) if small else (remaining > SMALL_SIZE):
            rest = _Block(segment=block.segment, offset=block.offset + size, size=remaining, small=small,
                          prev=block, next=block.next)
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._insert_free(rest)
        self._live[handle] = (block, nbytes)
        s = self.stats
        s.allocated += block.size
        s.requested += nbytes
        s.peak_allocated = max(s.peak_allocated, s.allocated)
        s.peak_requested = max(s.peak_requested, s.requested)
        return block.size

    def free(self, handle: int) -> None:
        block, nbytes = self._live.pop(handle)
        self.stats.allocated -= block.size
        self.stats.requested -= nbytes
        for neighbour in (block.prev, block.next):
            if neighbour is not None and neighbour.free:
                self._remove_free(neighbour)
                if neighbour is block.prev:
                    neighbour.size += block.size
                    neighbour.next = block.next
                    if block.next is not None:
                        block.next.prev = neighbour
                    block = neighbour
                else:
                    block.size += neighbour.size
                    block.next = neighbour.next
                    if neighbour.next is not None:
                        neighbour.next.prev = block
        self._insert_free(block)


__all__ = ["AllocatorStats", "CachingAllocator", "round_size", "segment_size"]
