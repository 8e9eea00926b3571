"""`mlrig probe`: detection parsers, real (small) measurements on this machine, history, overrides."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from mlrig.errors import MlrigError
from mlrig.probe import latest_profile, list_profiles, probe, profile_to_gpu_overrides, save_profile
from mlrig.probe.detect import parse_cache_size, parse_cpuinfo, parse_dmidecode_speed
from mlrig.probe.devices import RecordedBackend
from mlrig.probe.measure import cpu_matmul, disk_bench, stream_bandwidth
from mlrig.probe.models import GpuMeasurement

NVML = Path(__file__).parent / "fixtures" / "nvml"


def test_stream_bandwidth_is_plausible() -> None:
    r = stream_bandwidth(16 * 2**20, repeats=2)
    for v in (r.copy_gb_s, r.scale_gb_s, r.add_gb_s, r.triad_gb_s):
        assert 0.5 < v < 5000
    assert r.array_bytes == 16 * 2**20 and r.threads >= 1


def test_stream_rejects_tiny_arrays() -> None:
    with pytest.raises(MlrigError, match="too small"):
        stream_bandwidth(1000)


def test_cpu_matmul_is_plausible() -> None:
    r = cpu_matmul(256, repeats=2)
    assert 0 < r.gflops < 1e6 and r.n == 256  # no lower bound worth asserting on a shared, loaded machine


def test_disk_bench_measures_and_removes_its_file(tmp_path: Path) -> None:
    r = disk_bench(tmp_path, 4 * 2**20, random_reads_s=0.2)
    assert r.seq_write_mb_s > 0 and r.seq_read_mb_s > 0 and r.rand_read_4k_iops > 0
    assert r.file_bytes == 4 * 2**20
    assert list(tmp_path.iterdir()) == []


def test_disk_bench_removes_file_on_ctrl_c(tmp_path: Path) -> None:
    def interrupt(step: str) -> None:
        if "read" in step:
            assert len(list(tmp_path.iterdir())) == 1  # the file exists mid-run
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        disk_bench(tmp_path, 2 * 2**20, progress=interrupt)
    assert list(tmp_path.iterdir()) == []


def test_disk_bench_refuses_more_than_free_space(tmp_path: Path) -> None:
    free = shutil.disk_usage(tmp_path).free
    with pytest.raises(MlrigError, match="not enough free space"):
        disk_bench(tmp_path, 2 * free)
    assert list(tmp_path.iterdir()) == []


def test_disk_bench_rejects_missing_dir(tmp_path: Path) -> None:
    with pytest.raises(MlrigError, match="not a directory"):
        disk_bench(tmp_path / "nope")


def test_parsers() -> None:
    assert parse_cache_size("32768K") == 32 * 2**20
    assert parse_cache_size("2 MiB") == 2 * 2**20
    info = "vendor_id\t: GenuineIntel\nmodel name\t: Xeon X\nphysical id\t: 0\ncore id\t: 0\n\n" \
           "model name\t: Xeon X\nphysical id\t: 0\ncore id\t: 1\n\nphysical id\t: 0\ncore id\t: 1\n"
    assert parse_cpuinfo(info) == ("Xeon X", "GenuineIntel", 2)
    dmi = "Speed: 4800 MT/s\nConfigured Memory Speed: 4400 MT/s\nConfigured Memory Speed: Unknown\n"
    assert parse_dmidecode_speed(dmi) == 4400
    assert parse_dmidecode_speed("no memory") is None


def test_probe_detects_this_machine_and_maps_recorded_gpu(tmp_path: Path) -> None:
    prof = probe(tmp_path, measure=False, backend=RecordedBackend.from_file(NVML / "vram_full.json"))
    assert prof.cpu.logical_cpus >= 1 and prof.memory.total_bytes > 2**28
    assert prof.gpus[0].name == "NVIDIA GeForce RTX 4090" and prof.gpus[0].source == "NVML"
    # the catalog is written concurrently; either it maps, or the note says why not
    assert prof.gpus[0].catalog_id == "rtx-4090" or prof.gpus[0].catalog_note
    assert prof.stream is None


def test_quick_probe_measures_and_history_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLRIG_HOME", str(tmp_path / "home"))
    assert latest_profile() is None and list_profiles() == []
    prof = probe(tmp_path, quick=True, backend=RecordedBackend.from_file(NVML / "healthy.json"),
                 stream_bytes=8 * 2**20, disk_bytes=2 * 2**20, matmul_n=256)
    # rates only need to be measured (positive, finite): a shared, loaded machine can be arbitrarily slow,
    # so no speed floor here (benchmarks/ measure speed)
    assert prof.stream and prof.host_memory_bandwidth_gb_s and 0 < prof.host_memory_bandwidth_gb_s < math.inf
    assert prof.matmul and 0 < prof.matmul.gflops < math.inf
    assert prof.disk_bench and prof.disk_bench.seq_read_mb_s > 0
    assert [p.name for p in tmp_path.iterdir()] == []  # only the (absent) temp file was written there
    save_profile(prof)
    got = latest_profile()
    assert got is not None and got.model_dump() == prof.model_dump()
    assert latest_profile(hostname="some-other-host") is None
    assert len(list_profiles()) == 1


def test_gpu_overrides_use_measured_figures(tmp_path: Path) -> None:
    prof = probe(tmp_path, measure=False, backend=RecordedBackend.from_file(NVML / "healthy.json"))
    assert set(profile_to_gpu_overrides(prof)) == {"memory_gib"}
    prof.gpus[0].measured = GpuMeasurement(matmul_tflops={"bf16": 610.0, "fp32": 48.0},
                                           memory_bandwidth_gb_s=1650.0)
    o = profile_to_gpu_overrides(prof)
    assert o["bf16_tflops_dense"] == 610.0 and o["fp32_tflops"] == 48.0
    assert o["memory_bandwidth_gb_s"] == 1650.0 and o["memory_gib"] == pytest.approx(79.65)
    assert profile_to_gpu_overrides(prof, index=3) == {}
