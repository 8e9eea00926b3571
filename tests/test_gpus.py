"""GPU catalog: data integrity, published figures, name resolution and the `mlrig gpus` command."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mlrig.catalog.gpus import GPU, gpu_ids, load_gpus, resolve_gpu
from mlrig.errors import AmbiguousNameError, MlrigError, UnknownNameError

ROOT = Path(__file__).resolve().parents[1]


def by_id(gid: str) -> GPU:
    return next(g for g in load_gpus() if g.id == gid)


# ---------------------------------------------------------------- data integrity


def test_every_entry_has_source_and_iso_date() -> None:
    gpus = load_gpus()
    assert len(gpus) > 100
    for g in gpus:
        assert g.source.strip(), g.id
        assert dt.date.fromisoformat(g.source_date) <= dt.date(2026, 11, 22), g.id


def test_ids_unique_and_aliases_do_not_collide() -> None:
    ids = gpu_ids()
    assert len(ids) == len(set(ids))
    # every entry resolves to itself by id and by display name
    for g in load_gpus():
        assert resolve_gpu(g.id).id == g.id
        assert resolve_gpu(g.name).id == g.id


def test_physical_invariants() -> None:
    for g in load_gpus():
        # CPU-only hosts hold host RAM (a 12-channel server: 768 GiB); accelerators at most ~600 GiB
        assert 0.5 < g.memory_gib < (4096 if g.hardware_class == "cpu" else 600), g.id
        assert (40 if g.hardware_class == "cpu" else 50) < g.memory_bandwidth_gb_s < 10_000, g.id
        if g.usable_memory_gib is not None:
            assert g.usable_memory_gib <= g.memory_gib
        # dense FP8 is at most 2x dense BF16 (a 4x ratio would mean a sparse or FP16-acc figure slipped in)
        if g.fp8_tflops_dense and g.bf16_tflops_dense:
            assert g.fp8_tflops_dense <= 2.05 * g.bf16_tflops_dense, g.id  # L40S 733 vs 2x362.05


# ---------------------------------------------------------------- published figures


def test_rtx_4090_and_3090() -> None:
    r4090, r3090 = resolve_gpu("RTX 4090"), resolve_gpu("RTX 3090")
    for g in (r4090, r3090):
        # 24 GB of GDDR6X; NVML reports 24564 MiB on a 4090, 24576 MiB on a 3090
        assert g.memory_gib == pytest.approx(23.99, abs=0.02)
    assert r4090.memory_bandwidth_gb_s == 1008
    assert r3090.memory_bandwidth_gb_s == 936
    assert r4090.bf16_tflops_dense == pytest.approx(165.2)  # Ada whitepaper v2.02, FP32 accumulate
    assert r3090.bf16_tflops_dense == pytest.approx(71.0)
    assert r3090.nvlink_gb_s == pytest.approx(56.25)  # 112.5 GB/s bidirectional bridge
    assert r4090.nvlink_gb_s is None


def test_datacenter_dense_not_sparse() -> None:
    h100 = resolve_gpu("H100 SXM 80GB")
    assert h100.bf16_tflops_dense == pytest.approx(989.4)  # not the 1,979 sparse headline
    assert h100.fp8_tflops_dense == pytest.approx(1978.9)
    assert h100.memory_gib == pytest.approx(81559 / 1024, abs=0.01)  # NVML: 81559 MiB
    assert resolve_gpu("T4").memory_gib == pytest.approx(15.0)  # 16 GiB less 1/16 in-band ECC
    assert h100.nvlink_gb_s == 450
    assert resolve_gpu("A100-SXM4-80GB").nvlink_gb_s == 300
    assert resolve_gpu("L4").fp16_tflops_dense == pytest.approx(121)  # datasheet 242 is sparse
    assert resolve_gpu("L40S").bf16_tflops_dense == pytest.approx(362.05)
    assert resolve_gpu("L40").bf16_tflops_dense == pytest.approx(181.05)  # L40 prints half-rate figure
    assert resolve_gpu("MI300X").bf16_tflops_dense == pytest.approx(1307.4)  # AMD 2,614.9 is sparse


def test_geforce_fp32_accumulate_is_half_fp16_accumulate(reference_csv: Path) -> None:
    """GeForce FP16/BF16 with FP32 accumulate run at half the FP16-accumulate rate (reference .md)."""
    rows = list(csv.DictReader(reference_csv.open()))
    checked = 0
    for r in rows:
        if not r["name"].startswith("GeForce") or not r["fp16_tensor_fp16acc_tflops_dense"]:
            continue
        g = resolve_gpu(r["name"])
        assert g.hardware_class == "geforce"
        half = float(r["fp16_tensor_fp16acc_tflops_dense"]) / 2
        assert g.fp16_tflops_dense == pytest.approx(half, rel=0.01), g.id
        if g.bf16_tflops_dense is not None:
            assert g.bf16_tflops_dense == pytest.approx(half, rel=0.01), g.id
        checked += 1
    assert checked >= 15


def test_per_device_boards_and_apple_working_set() -> None:
    k80 = resolve_gpu("K80")
    assert k80.devices_per_board == 2 and k80.memory_gib < 12  # one of the two 12 GB GPUs
    m = resolve_gpu("Apple M1 Max 32-core GPU 64GB")
    assert m.usable_memory_gib == pytest.approx(48.0)  # 3/4 of 64 GB (llama.cpp: 49152 MB)
    small = resolve_gpu("Apple M2 10-core GPU 16GB")
    assert small.usable_memory_gib == pytest.approx(16 * 2 / 3, abs=0.01)  # 10922.67 MB
    assert m.capacity_gib == m.usable_memory_gib


def test_apple_entries_name_their_metal_gpu_family() -> None:
    """The estimators read an Apple GPU's shader-core generation from `architecture` (performance.
    apple_alu_speedup): Apple's Metal feature set tables put M1 in family Apple7, M2 in Apple8, M3 and M4
    in Apple9 and M5 in Apple10."""
    expected = {"apple-m1-": "Apple7", "apple-m2-": "Apple8", "apple-m3-": "Apple9", "apple-m4-": "Apple9",
                "apple-m5-": "Apple10"}
    apple = [g for g in load_gpus() if g.vendor == "Apple"]
    for g in apple:
        family = next(f for prefix, f in expected.items() if g.id.startswith(prefix))
        assert g.architecture and g.architecture.endswith(f"(Metal GPU family {family})"), g.id


def test_llm_platforms_have_compute_figures() -> None:
    """Prefill needs a compute rate: Apple M3/M4 (every bin), RTX 4000 Ada and Arc A770 carry one."""
    apple = [g for g in load_gpus() if g.vendor == "Apple"]
    assert len(apple) >= 60
    m3_m4 = [g for g in apple if g.id.startswith(("apple-m3", "apple-m4"))]
    assert len(m3_m4) == 35
    for g in apple:
        # no matrix units: FP16 runs at the FP32 SIMD rate, carried in fp16_tflops_dense (as M1/M2)
        assert g.fp32_tflops and g.fp16_tflops_dense == g.fp32_tflops, g.id
        assert g.bf16_tflops_dense is None, g.id
    for g in m3_m4:
        assert "DERIVED" in (g.notes or "") and "GPU clock" in g.source, g.id
    for gid in ("rtx-4000-ada", "arc-a770-16gb"):
        g = by_id(gid)
        assert g.fp16_tflops_dense and g.bf16_tflops_dense == g.fp16_tflops_dense, gid
        assert g.tensor_tflops("fp16") == g.fp16_tflops_dense


def test_derived_compute_figures_hand_checked() -> None:
    # RTX 4000 Ada: 48 SM x 1024 dense FP16 FLOP/clk/SM (pro Ada, FP32 accumulate at full rate) x 2.175 GHz
    # boost; NVIDIA's own 26.7 TFLOPS FP32 = 6144 x 2 x 2.175 GHz. Not the datasheet's 327.6 (FP8 sparse).
    r4000 = by_id("rtx-4000-ada")
    assert r4000.fp16_tflops_dense == pytest.approx(48 * 1024 * 2.175e9 / 1e12, abs=0.05)
    assert r4000.fp16_tflops_dense == pytest.approx(106.9)
    assert r4000.fp8_tflops_dense == pytest.approx(2 * 106.9)
    assert r4000.fp32_tflops == pytest.approx(6144 * 2 * 2.175e9 / 1e12, abs=0.05)
    # same per-SM-per-clock rate as its in-catalog siblings (RTX 5000 Ada: 100 SM at 2.55 GHz)
    assert by_id("rtx-5000-ada").fp16_tflops_dense == pytest.approx(100 * 1024 * 2.55e9 / 1e12, abs=0.05)
    # Arc A770: 512 XMX engines x 128 FP16 ops/clk x 2.1 GHz Intel graphics clock; INT8 twice that
    a770 = by_id("arc-a770-16gb")
    assert a770.fp16_tflops_dense == pytest.approx(512 * 128 * 2.1e9 / 1e12, abs=0.05)
    assert a770.int8_tops_dense == pytest.approx(512 * 256 * 2.1e9 / 1e12, abs=0.06)
    # Apple: cores x 128 ALUs x 2 FLOP x top GPU DVFS clock (M3 1.338, M3 Pro/Max 1.380, M4 family 1.578 GHz)
    for gid, cores, ghz in [
        ("apple-m3-10c-16gb", 10, 1.338),
        ("apple-m3-pro-18c-36gb", 18, 1.380),
        ("apple-m3-max-40c-48gb", 40, 1.380),
        ("apple-m3-max-30c-96gb", 30, 1.380),
        ("apple-m4-10c-32gb", 10, 1.578),
        ("apple-m4-pro-20c-64gb", 20, 1.578),
        ("apple-m4-max-40c-128gb", 40, 1.578),
    ]:
        assert by_id(gid).fp32_tflops == pytest.approx(cores * 128 * 2 * ghz / 1e3, abs=0.006), gid
    assert resolve_gpu("Apple M3 Max 40-core GPU 48GB").fp16_tflops_dense == pytest.approx(14.13)
    # the bins of one chip scale with the core count, memory size does not matter
    assert by_id("apple-m4-max-32c-36gb").fp32_tflops == pytest.approx(16.16 * 32 / 40, abs=0.01)
    assert by_id("apple-m3-8c-8gb").fp32_tflops == by_id("apple-m3-8c-24gb").fp32_tflops


def test_json_regenerates_from_csv(reference_csv: Path) -> None:
    spec = importlib.util.spec_from_file_location("build_gpu_catalog", ROOT / "scripts/build_gpu_catalog.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    built = mod.build(reference_csv)
    shipped = json.loads((ROOT / "mlrig/data/gpus.json").read_text())
    assert built == shipped, "mlrig/data/gpus.json is stale: run scripts/build_gpu_catalog.py"


# ---------------------------------------------------------------- name resolution

SPELLINGS = {
    "RTX 4090": "rtx-4090",
    "rtx-4090": "rtx-4090",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "4090": "rtx-4090",
    "RTX 4090 24GB": "rtx-4090",
    "RTX 4090 24 GB": "rtx-4090",
    "3090": "rtx-3090",
    "RTX 3090 Ti": "rtx-3090-ti",
    "RTX 4070": "rtx-4070",
    "RTX 4070 Ti Super": "rtx-4070-ti-super",
    "H100 SXM 80GB": "h100-sxm-80gb",
    "H100 SXM5 80GB": "h100-sxm-80gb",
    "NVIDIA H100 80GB HBM3": "h100-sxm-80gb",
    "NVIDIA H100 PCIe": "h100-pcie-80gb",
    "H100 NVL": "h100-nvl-94gb",
    "A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-sxm-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "Tesla V100-SXM2-16GB": "v100-sxm2-16gb",
    "Tesla T4": "t4",
    "A10G": "a10g",
    "A10": "a10",
    "m2 ultra 192gb": "apple-m2-ultra-76c-192gb",
    "Apple M2 Ultra 76-core GPU 192GB": "apple-m2-ultra-76c-192gb",
    "Apple M2 Ultra 60-core GPU 192GB": "apple-m2-ultra-60c-192gb",
    "RX 7900 XTX": "rx-7900-xtx",
    "AMD Radeon RX 7900 XTX": "rx-7900-xtx",
    "RTX 6000 Ada": "rtx-6000-ada",
    "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada",
}


@pytest.mark.parametrize(("name", "gid"), SPELLINGS.items())
def test_spellings_resolve(name: str, gid: str) -> None:
    assert resolve_gpu(name).id == gid


BRIEF_LIST = [
    "RTX 3090", "RTX 3090 Ti", "RTX 4060 Ti 16GB", "RTX 4070", "RTX 4070 Ti Super", "RTX 4080", "RTX 4090",
    "RTX 5080", "RTX 5090", "RTX A4000", "RTX A5000", "RTX A6000", "RTX 6000 Ada", "RTX PRO 6000 Blackwell",
    "L4", "L40", "L40S", "A10", "A10G", "T4", "V100 SXM2 16GB", "V100 PCIe 32GB", "P40", "P100", "K80", "M40",
    "A100 SXM 40GB", "A100 PCIe 40GB", "A100 SXM 80GB", "A100 PCIe 80GB", "H100 SXM", "H100 PCIe",
    "H100 NVL", "H200", "B200", "GH200", "MI210", "MI250X", "MI300X", "MI325X", "Radeon 7900 XTX",
    "Intel Arc A770", "Gaudi 2", "Gaudi 3", "M1 Ultra 128GB", "M2 Max 96GB", "M3 Max 128GB", "M4 Pro 48GB",
    "M3 Ultra 512GB", "DGX Spark", "Jetson AGX Orin",
]


def test_catalog_covers_commonly_asked_accelerators() -> None:
    for name in BRIEF_LIST:
        resolve_gpu(name)  # raises if missing or ambiguous


@pytest.mark.parametrize(("name", "expected"), [
    ("H100", {"h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb"}),
    ("Apple M2 Ultra 76-core GPU", {"apple-m2-ultra-76c-64gb", "apple-m2-ultra-76c-128gb",
                                    "apple-m2-ultra-76c-192gb"}),
])
def test_ambiguous_lists_candidates(name: str, expected: set[str]) -> None:
    with pytest.raises(AmbiguousNameError) as e:
        resolve_gpu(name)
    assert set(e.value.candidates) == expected
    assert "\n" not in str(e.value)


def test_unknown_gives_candidates() -> None:
    with pytest.raises(UnknownNameError) as e:
        resolve_gpu("RTX 9090")
    assert "NVIDIA GeForce RTX 4090" in e.value.candidates
    assert "RTX 4090" in str(e.value) and "\n" not in str(e.value)
    for bad in ("", "   ", "x" * 10_000, "!!!"):
        with pytest.raises(MlrigError):
            resolve_gpu(bad)


def test_resolution_is_fast() -> None:
    resolve_gpu("RTX 4090")  # first load + index
    names = [*SPELLINGS, "H100", "RTX 9090"]
    t0 = time.perf_counter()
    for n in names:
        with contextlib.suppress(MlrigError):
            resolve_gpu(n)
    per_call_ms = (time.perf_counter() - t0) * 1e3 / len(names)
    assert per_call_ms < 5


# ---------------------------------------------------------------- CLI

REQUIRED = {"id", "name", "vendor", "memory_gib", "memory_bandwidth_gb_s", "fp16_tflops_dense",
            "bf16_tflops_dense", "fp8_tflops_dense", "tdp_w", "source"}


def run_json(*args: str) -> list[dict[str, Any]]:
    from mlrig.cli import app

    res = CliRunner().invoke(app, ["gpus", "--json", *args])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert isinstance(data, list)
    return data


def test_cli_json_has_required_keys() -> None:
    data = run_json()
    assert len(data) == len(load_gpus())
    for row in data:
        assert row.keys() >= REQUIRED
    h100 = next(r for r in data if r["id"] == "h100-sxm-80gb")
    assert h100["bf16_tflops_dense"] == 989.4


def test_cli_filters() -> None:
    apple = run_json("--vendor", "apple")
    assert apple and all(r["vendor"] == "Apple" for r in apple)
    geforce = run_json("--class", "geforce")
    assert geforce and all(r["hardware_class"] == "geforce" for r in geforce)
    big = run_json("--min-memory", "100")
    assert big and all((r["usable_memory_gib"] or r["memory_gib"]) >= 100 for r in big)  # capacity_gib
    assert "rtx-4090" not in {r["id"] for r in big}
    assert {r["id"] for r in run_json("--search", "4090")} == {"rtx-4090", "rtx-4090-laptop"}
    combined = run_json("--vendor", "nvidia", "--class", "datacenter", "--min-memory", "90")
    assert {"h200-sxm-141gb", "b200-180gb", "h100-nvl-94gb"} <= {r["id"] for r in combined}
    assert "h100-sxm-80gb" not in {r["id"] for r in combined}


def test_cli_table_and_bad_class() -> None:
    from mlrig.cli import app

    res = CliRunner().invoke(app, ["gpus", "--search", "H100"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "h100-sxm-80gb" in res.stdout
    bad = CliRunner().invoke(app, ["gpus", "--class", "gaming"])
    assert isinstance(bad.exception, MlrigError)


def test_gpus_named_by_calibration_rows_match_their_specs() -> None:
    b60 = resolve_gpu("Intel Arc Pro B60")
    # 160 XMX engines x 512 ops/clk x 2.4 GHz (hmc-tech.com lists 196.61 INT8 TOPS)
    assert b60.int8_tops_dense == pytest.approx(160 * 512 * 2.4e9 / 1e12, abs=0.1)
    assert b60.memory_bandwidth_gb_s == 19 * 192 / 8  # 19 Gbps x 192-bit
    assert 23.5 < b60.memory_gib <= 24
    pvc = resolve_gpu("Intel Data Center GPU Max 1100")
    assert pvc.tensor_tflops("bf16") == pytest.approx(448 * 512 * 1.55e9 / 1e12, abs=0.1)
    assert pvc.fp32_tflops == pytest.approx(448 * 16 * 2 * 1.55e9 / 1e12, abs=0.1)
    assert pvc.memory_bandwidth_gb_s == 1228.8 and 47 < pvc.memory_gib <= 48
    v100 = resolve_gpu("V100-SXM3-32GB (DGX-2)")
    assert v100.id == "v100-sxm3-32gb"
    assert v100.tensor_tflops("fp16") == 2000 / 16  # DGX-2: "2 petaFLOPS" over 16 GPUs
    assert v100.nvlink_gb_s == 150.0


def test_mi250x_single_gcd_is_half_the_board() -> None:
    # AMD MI250X board: 128 GB HBM2e, 3.2768 TB/s, 383 TFLOPS FP16/BF16; software sees two GCDs
    gcd = resolve_gpu("AMD Instinct MI250X (single GCD)")
    assert gcd.id == resolve_gpu("MI250X").id == "mi250x"
    assert gcd.memory_bandwidth_gb_s == pytest.approx(3276.8 / 2)
    assert gcd.tensor_tflops("bf16") == pytest.approx(383 / 2, abs=0.1)
    assert 63 < gcd.memory_gib <= 64


def test_every_tensor_core_gpu_has_a_tensor_rate() -> None:
    """NVIDIA GPUs from Volta on have tensor cores: without an FP16/BF16 dense rate the planner would price
    their prefill and training at the FP32 SIMD rate (the Jetson Orin rows once did: 8x too slow)."""
    from mlrig.catalog.gpus import load_gpus

    tensor = ("Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell")
    for g in load_gpus():
        if g.vendor == "NVIDIA" and (g.architecture or "").startswith(tensor):
            rate = g.fp16_tflops_dense or g.bf16_tflops_dense
            assert rate and rate > (g.fp32_tflops or 0.0), g.id


def test_24gb_geforce_memory_is_what_nvidia_smi_reports() -> None:
    """NVIDIA sells the RTX 3090, 3090 Ti and 4090 as "24 GB GDDR6X"; nvidia-smi's memory.total is 24576 MiB on a 3090
    and 24564 MiB on a 3090 Ti and a 4090 (public nvidia-smi tables, scripts/build_gpu_catalog.py NVML_MIB): the
    catalog keeps each as reported (24.00 / 23.99 / 23.99 GiB), and a "24 GB" filter finds all three."""
    from mlrig.commands.gpus import filter_gpus

    assert (by_id("rtx-3090").memory_gib, by_id("rtx-3090-ti").memory_gib, by_id("rtx-4090").memory_gib) == \
        (round(24576 / 1024, 2), round(24564 / 1024, 2), round(24564 / 1024, 2)) == (24.0, 23.99, 23.99)
    found = {g.id for g in filter_gpus(load_gpus(), min_memory_gib=24)}
    assert {"rtx-3090", "rtx-3090-ti", "rtx-4090"} <= found
