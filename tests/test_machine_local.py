"""`mlrig plan --machine local`: measured figures from the last probe replace datasheet ones."""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from mlrig.cli import app
from mlrig.probe.history import save_profile
from mlrig.probe.models import (
    CpuInfo,
    DiskBench,
    GpuInfo,
    GpuMeasurement,
    MachineProfile,
    MemoryInfo,
    StreamResult,
)

runner = CliRunner()


def _save(triad_gb_s: float, gpu: GpuInfo | None = None, disk: DiskBench | None = None) -> None:
    save_profile(MachineProfile(
        created_at="2026-11-22T00:00:00Z", hostname=socket.gethostname(), os="Linux", python="3.11",
        cpu=CpuInfo(model="test", logical_cpus=2, source="test"),
        memory=MemoryInfo(total_bytes=64 * 2**30, total_gib=64.0),
        gpus=[gpu] if gpu else [],
        stream=StreamResult(copy_gb_s=triad_gb_s, scale_gb_s=triad_gb_s, add_gb_s=triad_gb_s,
                            triad_gb_s=triad_gb_s, array_bytes=2**27, threads=2, method="test"),
        disk_bench=disk,
    ))


def _plan(*args: str) -> dict:
    res = runner.invoke(app, ["plan", *args, "--json", "--no-limits"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_needs_a_probe_first() -> None:
    res = runner.invoke(app, ["plan", "llama-3.1-8b", "--machine", "local"])
    assert res.exit_code == 2 or "mlrig probe" in str(res.exception)


def test_measured_host_bandwidth_drives_cpu_offload() -> None:
    # 70B at q4_k_m does not fit one 24 GB card: llama.cpp runs the spilled layers on the CPU.
    args = ("llama-3.1-70b", "--gpu", "RTX 4090", "--precision", "q4_k_m", "--engine", "llama.cpp")
    _save(triad_gb_s=20.0)
    slow = _plan(*args, "--machine", "local")["performance"]["decode_tok_s"]
    _save(triad_gb_s=80.0)
    fast = _plan(*args, "--machine", "local")["performance"]["decode_tok_s"]
    assert fast > slow * 1.5  # offload-bound: decode scales with host bandwidth


def test_local_gpu_and_its_measured_bandwidth() -> None:
    gpu = GpuInfo(index=0, vendor="NVIDIA", name="NVIDIA GeForce RTX 3090", catalog_id="rtx-3090",
                  memory_total_bytes=24 * 2**30, measured=GpuMeasurement(memory_bandwidth_gb_s=468.0))
    _save(triad_gb_s=40.0, gpu=gpu)
    local = _plan("llama-3.1-8b", "--precision", "q4_k_m", "--machine", "local")
    sheet = _plan("llama-3.1-8b", "--precision", "q4_k_m", "--gpu", "RTX 3090")
    assert local["gpu"] == "rtx-3090"
    # half the datasheet's 936 GB/s measured: decode (bandwidth bound) about halves
    ratio = local["performance"]["decode_tok_s"] / sheet["performance"]["decode_tok_s"]
    assert 0.4 < ratio < 0.7


def test_measured_disk_sets_the_checkpoint_write_time() -> None:
    disk = DiskBench(directory="/tmp", file_bytes=2**30, seq_write_mb_s=500.0, seq_read_mb_s=900.0,
                     rand_read_4k_iops=1e4, rand_read_4k_mb_s=40.0, direct_io=True)
    _save(triad_gb_s=40.0, disk=disk)
    args = ("llama-3.1-8b", "--gpu", "RTX 4090", "--method", "lora")
    local = _plan(*args, "--machine", "local")["training"]
    assert local["storage_gb_s"] == 0.5  # the probe's sequential write, MB/s -> GB/s
    given = _plan(*args, "--machine", "local", "--storage-gb-s", "4")["training"]  # a flag beats the probe
    assert given["storage_gb_s"] == 4.0
    assert local["checkpoint_write_s"] == pytest.approx(given["checkpoint_write_s"] * 8, rel=1e-3)  # 4 digits
