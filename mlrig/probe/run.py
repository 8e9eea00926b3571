"""`mlrig probe`: detect the hardware, then measure it. Callers pass a progress callback to render."""

from __future__ import annotations

import datetime as dt
import platform
import socket
from collections.abc import Callable
from pathlib import Path

from mlrig.probe.devices import GpuBackend
from mlrig.probe.models import MachineProfile

Step = Callable[[str], None]
DONE = "done: "  # a progress message starting with this reports a finished measurement and its result


def _noop(_: str) -> None:
    pass


def probe(directory: str | Path = ".", *, quick: bool = False, measure: bool = True,
          backend: GpuBackend | None = None, progress: Step = _noop,
          stream_bytes: int | None = None, disk_bytes: int | None = None,
          matmul_n: int | None = None) -> MachineProfile:
    """Detect and (unless `measure` is False) measure this machine.

    `progress` is told each step as it starts, and each finished measurement with its result as a
    message starting with `DONE`.

    Sizes default to: STREAM arrays 4x the last-level cache (at least 64 MiB; --quick 2x, at least
    32 MiB) so the kernels run from DRAM; matmul n=2048 (--quick 1024); disk file 256 MiB (--quick 32).
    """
    from mlrig.probe import detect
    from mlrig.probe import measure as m
    from mlrig.probe.devices import default_backend

    progress("detecting hardware")
    backend = backend or default_backend()
    cpu = detect.detect_cpu()
    notes: list[str] = []
    gpus = detect.detect_nvidia(backend) + detect.detect_amd() + detect.detect_apple()
    reason = getattr(backend, "reason", "")
    if not gpus:
        notes.append(f"no GPU detected{': ' + reason if reason else ''}")
    prof = MachineProfile(
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), hostname=socket.gethostname(),
        os=f"{platform.system()} {platform.release()}", python=platform.python_version(), cpu=cpu,
        memory=detect.detect_memory(), gpus=gpus, disks=detect.detect_disks(), quick=quick, notes=notes)
    backend.close()
    progress(f"{DONE}hardware: {cpu.logical_cpus} CPUs, {prof.memory.total_gib:.1f} GiB RAM, "
             f"{len(gpus)} GPU(s), {len(prof.disks)} disk(s)")
    if not measure:
        return prof
    llc = cpu.l3_bytes or cpu.l2_bytes or 32 * 2**20
    size = stream_bytes or max((2 if quick else 4) * llc, (32 if quick else 64) * 2**20)
    size = min(size, prof.memory.total_bytes // 16)  # three arrays + a temporary stay under 1/4 of RAM
    progress(f"host memory bandwidth (3 x {size / 2**20:.0f} MiB arrays)")
    prof.stream = m.stream_bandwidth(size, repeats=3 if quick else 5)
    progress(f"{DONE}host memory bandwidth: triad {prof.stream.triad_gb_s:g} GB/s, copy {prof.stream.copy_gb_s:g} GB/s")
    n = matmul_n or (1024 if quick else 2048)
    progress(f"CPU matmul ({n}x{n} float32)")
    prof.matmul = m.cpu_matmul(n)
    progress(f"{DONE}CPU matmul: {prof.matmul.gflops:g} GFLOP/s")
    prof.disk_bench = b = m.disk_bench(directory, disk_bytes or (32 if quick else 256) * 2**20,
                                       random_reads_s=1.0 if quick else 3.0, progress=progress)
    progress(f"{DONE}disk: write {b.seq_write_mb_s:g} MB/s, read {b.seq_read_mb_s:g} MB/s, "
             f"4 KiB random reads {b.rand_read_4k_iops:,.0f} IOPS")
    for g in prof.gpus:
        if g.vendor == "NVIDIA":
            progress(f"GPU {g.index}: matmul, memory and PCIe bandwidth (torch)")
            g.measured = m.gpu_measure(g.index, quick)
            if g.measured is None:
                prof.notes.append(f"GPU {g.index} not measured: torch with CUDA is not importable")
                progress(f"{DONE}GPU {g.index}: not measured (torch with CUDA is not importable)")
            else:
                progress(f"{DONE}GPU {g.index}: memory {g.measured.memory_bandwidth_gb_s} GB/s, matmul "
                         + ", ".join(f"{k} {v:g}" for k, v in g.measured.matmul_tflops.items()) + " TFLOPS")
    return prof


def profile_to_gpu_overrides(profile: MachineProfile, index: int = 0) -> dict[str, float]:
    """Catalog GPU fields to replace with figures measured on GPU `index` ({} when not measured).

    Keys are `mlrig.catalog.gpus.GPU` field names: memory_bandwidth_gb_s (device copy, 10^9 B/s),
    fp32/fp16/bf16 tensor TFLOPS (achieved dense, so lower than datasheet peaks) and memory_gib
    (what the device reports).
    """
    g = next((x for x in profile.gpus if x.index == index), None)
    if g is None:
        return {}
    out: dict[str, float] = {}
    if g.memory_total_bytes:
        out["memory_gib"] = g.memory_total_bytes / 2**30
    meas = g.measured
    if meas is None:
        return out
    if meas.memory_bandwidth_gb_s:
        out["memory_bandwidth_gb_s"] = meas.memory_bandwidth_gb_s
    for dtype, field in (("fp32", "fp32_tflops"), ("fp16", "fp16_tflops_dense"), ("bf16", "bf16_tflops_dense")):
        if dtype in meas.matmul_tflops:
            out[field] = meas.matmul_tflops[dtype]
    return out
