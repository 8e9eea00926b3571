"""Accelerator catalog: memory, bandwidth and dense tensor rates, each entry with its source.

Data lives in `mlrig/data/gpus.json` (built from ../shared/data/reference/accelerators_reference.csv
plus the cards users ask about that it lacks). Figures are *dense* tensor rates with FP32
accumulate (GeForce cards run FP16/BF16/FP8 at half rate with FP32 accumulate; vendors often
quote 2:4-sparse figures, which we never use).
"""

from __future__ import annotations

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
    aliases: list[str] = Field(default_factory=list)  # extra spellings incl. NVML names

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
