"""`mlrig monitor`: DCGM-compatible exposition from recorded readings, and one loopback serve."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from mlrig.probe.devices import GpuError, RecordedBackend, load_recording
from mlrig.probe.host import RecordedHostSampler
from mlrig.probe.monitor import MetricsExporter

NVML = Path(__file__).parent / "fixtures" / "nvml"


def exporter(name: str) -> MetricsExporter:
    rec = load_recording(NVML / name)
    return MetricsExporter(RecordedBackend(rec), RecordedHostSampler(rec), hostname="testhost")


def value(text: str, metric: str) -> float:
    line = next(ln for ln in text.splitlines() if ln.startswith(metric + "{") or ln.startswith(metric + " "))
    return float(line.rsplit(" ", 1)[1])


def test_exposition_uses_dcgm_names_labels_and_units() -> None:
    exp = exporter("vram_full.json")
    exp.update()
    text = exp.exposition()
    labels = ('{Hostname="testhost",UUID="GPU-00000000-1111-2222-3333-444444444444",gpu="0",'
              'modelName="NVIDIA GeForce RTX 4090"}')
    assert f"DCGM_FI_DEV_GPU_UTIL{labels}" in text
    used_mib, free_mib = value(text, "DCGM_FI_DEV_FB_USED"), value(text, "DCGM_FI_DEV_FB_FREE")
    assert used_mib == pytest.approx(23.2 * 1024, rel=1e-3)
    assert used_mib + free_mib == pytest.approx(23.99 * 1024, rel=1e-3)
    assert value(text, "DCGM_FI_PROF_PCIE_RX_BYTES") == 150_000 * 1000  # KB/s -> bytes/s
    for name in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK",
                 "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_PROF_PCIE_TX_BYTES"):
        assert name in text
    assert value(text, "mlrig_host_memory_total_bytes") == 128 * 2**30
    assert 'mlrig_host_cpu_percent{cpu="15"}' in text
    assert value(text, "mlrig_gpu_sampling_up") == 1


def test_gpu_lost_keeps_host_metrics() -> None:
    exp = exporter("gpu_lost.json")
    for _ in range(7):
        exp.update()
    assert value(exp.exposition(), "mlrig_gpu_sampling_up") == 0
    with pytest.raises(GpuError):
        exp.backend.sample()


def test_serves_metrics_on_loopback() -> None:
    exp = exporter("healthy.json")
    exp.update()
    server, thread = exp.serve(0, "127.0.0.1")
    try:
        port = server.server_port
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            body = resp.read().decode()
        assert "DCGM_FI_DEV_GPU_UTIL" in body and "NVIDIA H100 PCIe" in body
    finally:
        server.shutdown()
        thread.join(timeout=5)
