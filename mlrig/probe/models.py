"""Public I/O of `mlrig probe`: what the machine is, and what it measured."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class CpuInfo(BaseModel):
    model: str
    vendor: str | None = None
    physical_cores: int | None = None
    logical_cpus: int
    l1d_bytes: int | None = None  # per core
    l2_bytes: int | None = None  # per core (or per cluster)
    l3_bytes: int | None = None  # total last-level cache
    numa_nodes: int = 1
    # FP32 FLOP per cycle per core of the widest FMA the CPU reports (detect.fp32_flop_per_cycle) and its clock
    # (cpufreq base / max, else /proc/cpuinfo "cpu MHz"): the peak the catalog's cpu-* hosts are priced at
    fp32_flop_per_cycle: int | None = None
    clock_mhz: float | None = None
    source: str  # where the figures were read (/proc/cpuinfo, /sys, sysctl)


class MemoryInfo(BaseModel):
    total_bytes: int
    total_gib: float
    speed_mt_s: int | None = None
    speed_source: str = "unknown (dmidecode not available or not root)"


class DiskInfo(BaseModel):
    device: str
    mountpoint: str
    kind: Literal["nvme", "ssd", "hdd", "unknown"]
    total_bytes: int
    free_bytes: int
    free_gib: float
    kind_source: str = ""  # e.g. /sys/block/vda/queue/rotational=1 (virtual disks often report 1)


class GpuMeasurement(BaseModel):
    """Measured on the device with torch (absent when torch+CUDA is not importable)."""

    matmul_tflops: dict[str, float] = Field(default_factory=dict)  # dtype -> achieved dense TFLOPS
    memory_bandwidth_gb_s: float | None = None  # device-to-device copy, counted read+write
    h2d_pinned_gb_s: float | None = None
    h2d_pageable_gb_s: float | None = None
    method: str = ""


class GpuInfo(BaseModel):
    index: int
    vendor: str
    name: str
    uuid: str | None = None
    memory_total_bytes: int | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    power_limit_w: float | None = None
    catalog_id: str | None = None  # mlrig.catalog.gpus entry this device maps to
    catalog_note: str | None = None
    measured: GpuMeasurement | None = None
    source: str = ""


class StreamResult(BaseModel):
    """Host memory bandwidth, STREAM-style (McCalpin), run with numpy on a thread pool."""

    copy_gb_s: float
    scale_gb_s: float
    add_gb_s: float
    triad_gb_s: float
    array_bytes: int  # per array; three arrays
    threads: int
    method: str


class MatmulResult(BaseModel):
    gflops: float
    n: int
    dtype: str = "float32"
    method: str


class DiskBench(BaseModel):
    directory: str
    file_bytes: int
    seq_write_mb_s: float  # MB = 10^6 bytes; includes the final fsync
    seq_read_mb_s: float
    rand_read_4k_iops: float
    rand_read_4k_mb_s: float
    direct_io: bool  # True: reads bypassed the page cache (O_DIRECT)
    notes: list[str] = Field(default_factory=list)


class MachineProfile(BaseModel):
    created_at: str  # ISO 8601 UTC
    hostname: str
    os: str
    python: str
    cpu: CpuInfo
    memory: MemoryInfo
    gpus: list[GpuInfo] = Field(default_factory=list)
    disks: list[DiskInfo] = Field(default_factory=list)
    stream: StreamResult | None = None
    matmul: MatmulResult | None = None
    disk_bench: DiskBench | None = None
    quick: bool = False
    notes: list[str] = Field(default_factory=list)

    @property
    def host_memory_bandwidth_gb_s(self) -> float | None:
        """Measured host bandwidth for offload estimates: the STREAM triad figure (10^9 B/s)."""
        return self.stream.triad_gb_s if self.stream else None
