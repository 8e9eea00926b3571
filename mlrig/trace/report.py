"""The trace result (pydantic, no torch): what `mlrig trace` prints and `--json` carries as `trace`.

GiB = 2^30 bytes. "allocated" is what `torch.cuda.max_memory_allocated()` reports (live tensors,
in allocator blocks), "reserved" is `torch.cuda.max_memory_reserved()` (the caching allocator's
segments), and "nvidia-smi" adds the CUDA context, which lives outside PyTorch's allocator.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from mlrig.trace.recipe import Recipe

# CUDA context + kernel images loaded by a PyTorch process, outside the caching allocator
# (nvidia-smi minus torch.cuda.memory_reserved()). With lazy module loading (CUDA >= 11.7,
# PyTorch's default since 1.13): 287 MB for a bare tensor (pytorch/pytorch#86509, 2022),
# "around 400MB" (ptrblck, pytorch/pytorch#109888, 2023), 426 MiB on an RTX 6000 Ada with
# torch 2.10+cu130 (unslothai/unsloth-zoo#1053, 2026); a training process that has loaded cuBLAS,
# flash-attention and optimizer kernels sits higher. Taken as 0.45 GiB (the formula's
# `Calibration.cuda_context_bytes`), 0.3-0.7 GiB in practice.
CUDA_CONTEXT_GIB = 0.45
CUDA_CONTEXT_RANGE_GIB = (0.3, 0.7)


class PhasePeak(BaseModel):
    phase: str  # forward | backward | optimizer | prefill | decode
    peak_allocated_gib: float
    by_category_gib: dict[str, float] = {}


class Comparison(BaseModel):
    """The formula estimate (`mlrig.planner.evaluate` on the same plan) beside the trace."""

    formula_allocated_gib: float | None = None  # live tensors (training only)
    formula_per_gpu_gib: float  # the formula's nvidia-smi-like figure
    rows: list[tuple[str, float, float]] = []  # (component, trace GiB, formula GiB)
    explanations: list[str] = []


class TraceReport(BaseModel):
    model: str
    config_source: str
    recipe: Recipe
    recipe_text: list[str]
    kernels: list[str] = Field(default_factory=list, description="attention kernels the trace used")
    params: int
    trainable_params: int
    layers: int
    layers_traced: list[int]
    extrapolated: bool
    peak_allocated_gib: float
    peak_reserved_gib: float
    nvidia_smi_gib: float
    cuda_context_gib: float = CUDA_CONTEXT_GIB
    peak_phase: str
    by_category_gib: dict[str, float]  # live at the peak
    phases: list[PhasePeak]
    gpu: str | None = None
    gpu_capacity_gib: float | None = None
    fits: bool | None = None
    trace_seconds: float
    cached: bool = False
    comparison: Comparison | None = None
    notes: list[str] = []


__all__ = ["CUDA_CONTEXT_GIB", "Comparison", "PhasePeak", "TraceReport"]
