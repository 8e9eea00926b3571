"""Public I/O of `mlrig diagnose`: samples, findings and the report."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from mlrig.probe.devices import GpuDevice, GpuSample
from mlrig.probe.host import HostSample

FindingKind = Literal[
    "input-pipeline",  # GPU waits on CPU-side data loading
    "cpu-bound",  # CPU-only job limited by CPU (single- or multi-threaded)
    "io-bound",  # storage: high iowait or heavy disk traffic with little CPU
    "memory-bound",  # VRAM (nearly) full: OOM risk, no headroom for a bigger batch
    "pcie-bound",  # heavy host<->device traffic relative to the link
    "thermal-throttle",
    "power-throttle",
    "host-swap",
    "idle",  # job sleeping / waiting: little CPU, no I/O, idle GPU
    "gpu-underutilised",  # GPU < 90% busy but no host-side cause visible
    "gpu-bound-healthy",
    "gpu-lost",
    "exited-early",  # the command ended within the first seconds: nothing to measure
    "cpu-contention",  # the job waits for a CPU because other processes use the cores
    "unclear",
]


class Sample(BaseModel):
    """Everything read at one instant."""

    t_s: float
    gpus: list[GpuSample] = Field(default_factory=list)
    host: HostSample = Field(default_factory=HostSample)


class Finding(BaseModel):
    kind: FindingKind
    severity: Literal["critical", "warning", "info"]
    summary: str  # one line
    evidence: dict[str, float] = Field(default_factory=dict)  # figures, names carry units
    remedies: list[str] = Field(default_factory=list)
    rule: str = ""  # the threshold applied and where it comes from
    gpu_index: int | None = None


class Summary(BaseModel):
    """Mean/peak figures over the run (means over samples where the reading existed)."""

    duration_s: float
    n_samples: int
    logical_cpus: int
    cpu_percent_mean: float  # whole machine, mean over cores
    cpu_percent_max_core_mean: float  # the busiest core each sample, averaged
    tree_cpu_percent_mean: float  # the job's processes, % of one core
    tree_cpu_percent_max_worker_mean: float  # busiest non-root process in the tree
    n_procs_max: int
    iowait_percent_mean: float | None
    disk_read_mb_s_mean: float  # MB = 10^6 bytes
    disk_write_mb_s_mean: float
    proc_io_mb_s_mean: float  # the job's own storage reads + writes
    run_delay_s_per_s_mean: float | None = None  # job threads' wait for a CPU, s per s (Linux schedstat)
    other_cpu_percent_mean: float = 0.0  # CPU used by everything but the job, % of one core
    ram_used_gib_max: float
    ram_total_gib: float
    swap_mb_s_mean: float
    gpus: list[GpuSummary] = Field(default_factory=list)


class GpuSummary(BaseModel):
    index: int
    name: str
    n_samples: int
    util_percent_mean: float | None
    memory_used_gib_max: float | None
    memory_total_gib: float | None
    memory_used_fraction_max: float | None
    pcie_rx_gb_s_mean: float | None  # GB = 10^9 bytes
    pcie_tx_gb_s_mean: float | None
    pcie_link_gb_s: float | None  # theoretical per direction for the current link
    power_w_mean: float | None
    power_limit_w: float | None
    temperature_c_max: float | None
    sm_clock_mhz_mean: float | None
    sm_clock_max_mhz: int | None
    thermal_throttle_fraction: float
    power_throttle_fraction: float


Summary.model_rebuild()


class DiagnoseReport(BaseModel):
    command: list[str] = Field(default_factory=list)
    pid: int | None = None
    exit_status: int | None = None
    interrupted: bool = False
    interval_s: float
    devices: list[GpuDevice] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    summary: Summary
    findings: list[Finding]
    files: list[str] = Field(default_factory=list)
