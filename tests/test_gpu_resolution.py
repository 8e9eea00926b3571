"""Issue 14 §2: spellings, variant defaults with notes, custom accelerators (--gpu-spec, gpus.toml)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mlrig.catalog.gpus import load_gpus, load_user_gpus, resolve_gpu, resolve_hardware_gpu, user_gpus_path
from mlrig.errors import AmbiguousNameError, MlrigError
from mlrig.planner import evaluate


@pytest.mark.parametrize(("name", "gid"), [
    ("rtx4090", "rtx-4090"), ("RTX4090", "rtx-4090"), ("3090ti", "rtx-3090-ti"), ("3090 Ti", "rtx-3090-ti"),
    ("MI300", "mi300x"), ("mi300x", "mi300x"), ("5090", "rtx-5090"), ("rtx5090", "rtx-5090"),
    ("4070ti super", "rtx-4070-ti-super"), ("H100 96GB", "gh200-96gb"), ("l40s", "l40s"), ("L40", "l40"),
])
def test_everyday_spellings(name: str, gid: str) -> None:
    assert resolve_gpu(name).id == gid


def test_same_memory_variants_resolve_to_the_common_one_with_a_note() -> None:
    g = resolve_gpu("A100 80GB")
    assert g.id == "a100-sxm-80gb"
    (note,) = g.resolution_notes
    # the note names the other variant and the figure that differs (PCIe: 1,935 GB/s)
    assert "a100-pcie-80gb" in note and "1,935 GB/s" in note and "\n" not in note
    assert resolve_gpu("a100-sxm-80gb").resolution_notes == []  # the catalog entry itself is untouched


def test_variants_with_different_memory_stay_ambiguous() -> None:
    with pytest.raises(AmbiguousNameError) as e:
        resolve_gpu("A100")  # 40 or 80 GB: a fit answer would hang on the guess
    assert {"a100-sxm-40gb", "a100-sxm-80gb"} <= set(e.value.candidates)


def test_planner_shows_the_variant_note() -> None:
    res = evaluate({"model": "llama-3.1-8b", "hardware": {"gpu": "A100 80GB"}})
    assert res.gpu == "a100-sxm-80gb"
    assert any("a100-pcie-80gb" in n for n in res.notes)


def test_gpu_spec_alone_makes_a_custom_device() -> None:
    g = resolve_hardware_gpu(None, "memory_gib=32,bandwidth_gb_s=1792,bf16_tflops=209")
    assert (g.id, g.memory_gib, g.memory_bandwidth_gb_s, g.bf16_tflops_dense) == ("custom", 32, 1792, 209)
    assert g.fp16_tflops_dense == 209  # one 16-bit rate given: used for both
    res = evaluate({"model": "llama-3.1-8b", "workload": {"precision": "q4_k_m"},
                    "hardware": {"gpu_spec": {"memory_gib": 32, "bandwidth_gb_s": 1792, "bf16_tflops": 209}}})
    assert res.gpu == "custom" and res.fits
    # decode is bandwidth-bound: doubling the bandwidth must speed it up
    fast = evaluate({"model": "llama-3.1-8b", "workload": {"precision": "q4_k_m"},
                     "hardware": {"gpu_spec": {"memory_gib": 32, "bandwidth_gb_s": 3584, "bf16_tflops": 209}}})
    assert fast.performance is not None and res.performance is not None
    assert fast.performance.decode_tok_s > 1.3 * res.performance.decode_tok_s


def test_gpu_spec_overrides_a_named_gpu() -> None:
    res = evaluate({"model": "llama-3.1-8b", "hardware": {"gpu": "RTX 4090", "gpu_spec": "bandwidth_gb_s=500"}})
    base = evaluate({"model": "llama-3.1-8b", "hardware": {"gpu": "RTX 4090"}})
    assert res.gpu == "rtx-4090"
    assert res.memory is not None and base.memory is not None
    assert res.memory.gpu_capacity_gib == base.memory.gpu_capacity_gib
    assert res.performance is not None and base.performance is not None
    assert res.performance.decode_tok_s < base.performance.decode_tok_s


@pytest.mark.parametrize(("spec", "match"), [
    ("mem=32", "unknown key 'mem'"),
    ("memory_gib=abc,bandwidth_gb_s=1,bf16_tflops=1", "memory_gib"),
    ("memory_gib=-4,bandwidth_gb_s=1,bf16_tflops=1", "memory_gib"),
    ("memory_gib=32", "needs bandwidth_gb_s"),
    ("memory_gib", "KEY=VALUE"),
    ("memory_gib=nan,bandwidth_gb_s=1,bf16_tflops=1", "memory_gib"),
])
def test_gpu_spec_errors_are_one_line(spec: str, match: str) -> None:
    with pytest.raises(MlrigError, match=match) as e:
        resolve_hardware_gpu(None, spec)
    assert "\n" not in str(e.value)


def _write_user_catalog(text: str) -> Path:
    path = user_gpus_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_user_catalog_in_xdg_config_home() -> None:
    assert user_gpus_path() == Path(os.environ["XDG_CONFIG_HOME"]) / "mlrig" / "gpus.toml"
    _write_user_catalog('''
[my-npu]
name = "Lab NPU 48GB"
memory_gib = 48
bandwidth_gb_s = 1200
bf16_tflops = 300
aliases = ["lab npu"]
source = "vendor sheet, 2026-10"

[rtx-4090-slow]
base = "rtx-4090"
bandwidth_gb_s = 800
''')
    g = resolve_gpu("lab npu")
    assert (g.id, g.memory_gib, g.source) == ("my-npu", 48, "vendor sheet, 2026-10")
    slow = resolve_gpu("rtx-4090-slow")
    assert slow.memory_gib == resolve_gpu("rtx-4090").memory_gib and slow.memory_bandwidth_gb_s == 800
    assert "my-npu" in {x.id for x in load_gpus()}


@pytest.mark.parametrize(("text", "match"), [
    ("[x]\nmemory_gib = 1\n", "needs bandwidth_gb_s"),
    ("[x]\nbase = \"no-such-gpu\"\n", "not a catalog id"),
    ("[x]\nmemory_gb = 1\n", "unknown key 'memory_gb'"),
    ("[x\n", "not valid TOML"),
    ("x = 3\n", "each accelerator is a table"),
])
def test_user_catalog_errors_name_the_file(text: str, match: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The file is optional: its fault is one warning line naming it and the problem (load_user_gpus raises it),
    and the built-in catalog answers."""
    path = _write_user_catalog(text)
    with pytest.raises(MlrigError, match=match) as e:
        load_user_gpus(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)
    assert resolve_gpu("rtx 4090").id == "rtx-4090"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"mlrig: warning: ignoring {path} (") and match in err


# ---- issue 14 §2: the GPUs people name, and entries that misled ---------------------------------

ISSUE_14_GPUS = [
    "H20", "A800", "H800", "L20", "L2", "H100 96GB", "B300", "GB200", "GB300", "MI325X", "MI355X", "RX 7900 XT",
    "RTX 4060", "RTX 3060 Laptop", "RTX 4090 Laptop", "RTX 5060 Ti 16GB", "RTX 5060", "RTX 5070", "RTX 5070 Ti",
    "RTX 5080", "RTX 5090", "RTX PRO 6000 Blackwell", "RTX PRO 6000 Server", "Ryzen AI Max+ 395",
    "M3 Ultra 512GB", "M4 Max 128GB", "M4 Pro 48GB", "M5 32GB", "Jetson AGX Orin", "Jetson Thor", "TPU v4",
    "TPU v5e", "cpu",
]


def test_issue_14_gpus_resolve_with_sources() -> None:
    for name in ISSUE_14_GPUS:
        g = resolve_gpu(name)
        assert g.source and g.source_date and g.verification, name


def test_derived_geforce_rates_follow_the_documented_ratios() -> None:
    # Blackwell GeForce: FP16 (FP32 acc) = AI TOPS / 16 (RTX 5090: 3352 -> 209.5), FP4 dense = AI TOPS / 2
    r5070 = resolve_gpu("RTX 5070")
    assert r5070.bf16_tflops_dense == pytest.approx(988 / 16, abs=0.05)
    assert r5070.fp4_tflops_dense == pytest.approx(988 / 2)
    # RTX PRO 6000 Blackwell: every edition carries an FP4 rate, 4x its FP16 dense (4000 AI TOPS is sparse)
    for name in ("RTX PRO 6000", "RTX PRO 6000 Server", "RTX PRO 6000 Max-Q"):
        g = resolve_gpu(name)
        assert g.fp4_tflops_dense == pytest.approx(4 * g.fp16_tflops_dense, rel=0.01), name
    # desktop GeForce Blackwell: FP4 dense = AI TOPS / 2 (RTX 5090: the whitepaper's 1676), 4x FP8 with FP32 acc
    for name, ai_tops in (("RTX 5070 Ti", 1406), ("RTX 5080", 1801), ("RTX 5090", 3352)):
        g = resolve_gpu(name)
        assert g.fp4_tflops_dense == pytest.approx(ai_tops / 2, rel=0.001), name
        assert g.fp4_tflops_dense == pytest.approx(4 * g.fp8_tflops_dense, rel=0.01), name
    # Ada GeForce: FP16 (FP32 acc) = AI TOPS / 8 (RTX 4090: 1321 -> 165.2)
    assert resolve_gpu("RTX 4060").fp16_tflops_dense == pytest.approx(242 / 8, abs=0.06)
    # a laptop 4090 is a 16 GB AD103, far from the desktop card
    assert resolve_gpu("RTX 4090 Laptop").memory_gib < 17 < resolve_gpu("RTX 4090").memory_gib


def test_misleading_entries_fixed() -> None:
    spark = resolve_gpu("DGX Spark")
    assert spark.bf16_tflops_dense is not None and spark.fp4_tflops_dense == 500  # 1 PFLOP FP4 is sparse
    assert resolve_gpu("MI300X").nvlink_gb_s == 448  # Infinity Fabric: 896 GB/s aggregate, per direction
    from mlrig.catalog.interconnects import default_link

    a100 = resolve_gpu("A100 PCIe 80GB")
    assert default_link(a100.pcie_gen, a100.nvlink_gb_s, 2, 1, a100.nvlink_max_gpus).kind == "nvlink"
    assert default_link(a100.pcie_gen, a100.nvlink_gb_s, 4, 1, a100.nvlink_max_gpus).kind == "pcie"  # pairs only
    sxm = resolve_gpu("A100 SXM 80GB")
    assert default_link(sxm.pcie_gen, sxm.nvlink_gb_s, 8, 1, sxm.nvlink_max_gpus).kind == "nvlink"


def test_cpu_only_host_plans_on_ddr_with_llama_cpp() -> None:
    res = evaluate({"model": "llama-3.1-8b", "workload": {"precision": "q4_k_m"}, "hardware": {"gpu": "cpu"}})
    assert res.gpu == "cpu-ddr5-2ch" and res.engine == "llama.cpp" and res.fits
    assert any("host RAM" in n for n in res.notes)
    assert res.performance is not None
    # decode is bound by DDR: ~4.9 GB of Q4_K_M weights per token at <= 89.6 GB/s peak
    assert res.performance.decode_tok_s < 89.6 / 4.5
    epyc = evaluate({"model": "llama-3.1-8b", "workload": {"precision": "q4_k_m"},
                     "hardware": {"gpu": "EPYC 9654"}})
    assert epyc.performance is not None and epyc.performance.decode_tok_s > 3 * res.performance.decode_tok_s


def test_user_catalog_path_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The path is cached per (XDG_CONFIG_HOME, HOME): a changed environment gives the new path."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "a"))
    assert user_gpus_path() == tmp_path / "a" / "mlrig" / "gpus.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "b"))
    assert user_gpus_path() == tmp_path / "b" / "mlrig" / "gpus.toml"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_gpus_path() == tmp_path / "home" / ".config" / "mlrig" / "gpus.toml"
    monkeypatch.setenv("HOME", str(tmp_path / "home2"))
    assert user_gpus_path() == tmp_path / "home2" / ".config" / "mlrig" / "gpus.toml"


def test_catalog_index_builds_entries_on_use_and_refuses_duplicate_ids() -> None:
    """The packaged catalog is indexed from its raw JSON; `builtin_gpus` and `resolve_gpu` hand out
    the same validated objects, and a duplicated id is an error rather than a silently lost entry."""
    import json

    from mlrig.catalog import gpus as cat

    raw = json.loads((Path(cat.__file__).parents[1] / "data" / "gpus.json").read_text(encoding="utf-8"))
    idx = cat._Index(raw)
    assert [g.id for g in idx.all()] == [d["id"] for d in raw]
    assert cat.resolve_gpu("RTX 4090") is next(g for g in cat.builtin_gpus() if g.id == "rtx-4090")
    with pytest.raises(ValueError, match="duplicate id 'rtx-4090'"):
        cat._Index([*raw, next(d for d in raw if d["id"] == "rtx-4090")])

