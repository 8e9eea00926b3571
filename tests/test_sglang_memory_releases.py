"""SGLang's card-sized defaults across the 0.5 series (engines.SGLANG_GPU_BUCKET_ERAS, SGLANG_PREFILL_GRAPHS),
hand-read from `_handle_gpu_memory_settings` in the PyPI wheels (server_args.py to 0.5.19, arg_groups/memory_hook.py
from 0.5.20): the 20-35 GiB tier's CUDA-graph slots 16 (0.5.3, 0.5.4) -> 24 (0.5.5-0.5.19) -> 48 with 4,096-token
chunks (0.5.20 on), and the prefill CUDA graphs' reserve from 0.5.10."""

import json

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.engines import (
    sglang_cuda_graph_max_bs,
    sglang_gpu_defaults,
    sglang_mem_fraction_static,
    sglang_prefill_graph_sizes,
)
from mlrig.planner import evaluate
from mlrig.validation import calibration_dir


def test_small_card_tier_by_release() -> None:
    """An L4 (22.5 GiB): 2,048 tokens and 16 slots at TP < 4 under 0.5.3 / 0.5.4, 24 under 0.5.5 to 0.5.19,
    4,096 tokens and 48 slots from 0.5.20 (the current release); at TP >= 4 80, then 160."""
    l4 = resolve_gpu("L4")
    assert sglang_gpu_defaults(l4, 1, "0.5.3") == sglang_gpu_defaults(l4, 1, "0.5.4") == (2048, 16)
    assert sglang_gpu_defaults(l4, 1, "0.5.5") == sglang_gpu_defaults(l4, 1, "0.5.19") == (2048, 24)
    assert sglang_gpu_defaults(l4, 1, "0.5.20") == sglang_gpu_defaults(l4, 1, None) == (4096, 48)
    assert sglang_gpu_defaults(l4, 4, "0.5.19") == (2048, 80) and sglang_gpu_defaults(l4, 4, "0.5.23") == (4096, 160)
    assert sglang_cuda_graph_max_bs(l4.memory_gib, 1, "0.5.4") == 16
    assert sglang_cuda_graph_max_bs(l4.memory_gib, 1, "0.5.5") == 24
    assert sglang_cuda_graph_max_bs(l4.memory_gib, 1, "0.5") == 48
    # the other tiers did not move: an H100 8,192 / 256 under every 0.5 release
    h100 = resolve_gpu("H100 SXM")
    assert sglang_gpu_defaults(h100, 1, "0.5.3") == sglang_gpu_defaults(h100, 1, None) == (8192, 256)


def test_prefill_graph_sizes_hand_counted() -> None:
    """4..32 step 4 (8), 48..256 step 16 (14), 288..512 step 32 (8), 576..1024 step 64 (8), 1280..4096 step 256
    (12), 4608.. step 512: 42 sizes up to 2,048 tokens, 50 to 4,096, 58 to 8,192, 74 to 16,384."""
    assert [sglang_prefill_graph_sizes(n) for n in (2048, 4096, 8192, 16384)] == [42, 50, 58, 74]


def test_mem_fraction_reserves_prefill_graphs_from_0_5_10() -> None:
    """An 80 GB H100 at TP 1 reserves 13,440 MiB under 0.5.9 and 13,440 + 58 x 8 = 13,904 from 0.5.10; at TP 8
    an MLA model (DeepSeek) 1,536 MiB flat instead: 512 + 12,288 + 1,024 + 1,024 + 1,536 = 16,384. AMD GPUs run no
    prefill graphs (SGLang turns them off on HIP): an MI300X keeps 0.5.9's figure."""
    h100, mi300x = resolve_gpu("H100 SXM"), resolve_gpu("MI300X")
    mib = h100.memory_gib * 1024
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5.9") == round((mib - 13440) / mib, 3) == 0.835
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5.10") == round((mib - 13904) / mib, 3) == 0.83
    assert sglang_mem_fraction_static(h100, 8, 1, "0.5.10") == round((mib - 15312) / mib, 3)
    assert sglang_mem_fraction_static(h100, 8, 1, "0.5.10", mla=True) == round((mib - 16384) / mib, 3)
    assert sglang_mem_fraction_static(mi300x, 8, 1, "0.5.10") == sglang_mem_fraction_static(mi300x, 8, 1, "0.5.9")


def test_mem_fraction_follows_the_plans_chunked_prefill_size() -> None:
    """SGLang reserves 1.5 MiB per --chunked-prefill-size token, the one given or the card's default: 32,768 on an
    H100 at TP 1 under 0.5.7 (no prefill graphs yet) reserves 512 + 49,152 + 512 + 128 = 50,304 MiB."""
    h100 = resolve_gpu("H100 SXM")
    mib = h100.memory_gib * 1024
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5.7", chunk_tokens=32768) == round((mib - 50304) / mib, 3)
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5.7", chunk_tokens=None) == 0.835


def test_current_release_leaves_a_24gb_card_a_small_kv_pool() -> None:
    """Llama-3-8B bf16 (15 GiB) on an A10G: 0.5.19 reserves 512 + 3,072 + 48 + 128 MiB (mem_fraction_static
    0.822); the current release 512 + 6,144 + 96 + 128 + 50 x 8 = 7,280 MiB (0.684), a KV pool an eighth as large."""
    def kv(version: str | None) -> int:
        w: dict[str, object] = {"precision": "bf16", "engine": "sglang", "prompt_tokens": 51, "output_tokens": 256}
        if version:
            w["engine_version"] = version
        r = evaluate({"model": "llama-3-8b", "workload": w, "hardware": {"gpu": "A10G"}})
        assert r.kv_cache_capacity_tokens is not None
        return r.kv_cache_capacity_tokens

    old, new = kv("0.5.19"), kv(None)
    assert new < old / 5


def test_inferencex_rows_keep_the_suspect_figures_unscored() -> None:
    """INFXR1H200-*: 21 rows of 7 runs; every mean TTFT (the opening wave's cold cost not stated) and the first
    1k/1k run at 4 users (TPOT 1.8x the sweep's 8-user run) are anomalies; TTFT rows say they are means."""
    rows = [json.loads(line) for line in (calibration_dir() / "serving_sglang_inferencex_h200.jsonl").open()]
    assert len(rows) == 21 and all(r["split"] == "fit" for r in rows)
    ttft = [r for r in rows if r["metric"] == "ttft_ms"]
    assert len(ttft) == 7 and all(r["anomaly"] and r["statistic"] == "mean" for r in ttft)
    scored = [r for r in rows if not r.get("anomaly")]
    assert len(scored) == 12
    assert all(r["plan"]["workload"]["engine_version"] == "0.5.7" for r in rows)
    assert pytest.approx(223.6) == next(r["value"] for r in scored if r["metric"] == "throughput_tok_s_per_gpu"
                                        and r["plan"]["workload"]["batch_size"] == 64)


def test_pipeline_parallel_runs_without_the_overlap_scheduler() -> None:
    """SGLang disables its overlap scheduler under pipeline parallelism (server_args.py `if self.pp_size > 1:
    self.disable_overlap_schedule = True`, 0.5.3-0.5.10; 0.5.23 arg_groups/overrides.py)."""
    from mlrig.estimators import serving
    from mlrig.estimators.resolved import resolve
    from mlrig.planner import parse_plan, resolve_arch

    def resolved(pp: int):  # type: ignore[no-untyped-def]
        p = parse_plan({"model": "llama-3-8b", "workload": {"precision": "bf16", "engine": "sglang",
                                                             "engine_version": "0.5.7"},
                        "hardware": {"gpu": "H100 SXM", "count": pp, "pipeline_parallel": pp}})
        return resolve(resolve_arch(p), p, resolve_gpu(p.hardware.gpu))

    assert serving.sglang_overlap(resolved(1)) and not serving.sglang_overlap(resolved(2))


def test_tonyli_gh200_rows_carry_the_files_means() -> None:
    """TONYGH200-*: 17 bench_serving files, 3 figures each; plan lengths are the files' totals / requests (100 prompts
    of random_input_len 512 total 26,497 tokens: 265 each; their outputs 6,180: 62 each), SGLang 0.5.5.post3 at
    mem_fraction_static 0.9 on one GH200; the 200-prompt file at 200 users is an offline burst."""
    rows = [json.loads(line) for line in (calibration_dir() / "serving_sglang_gh200_tonyli.jsonl").open()]
    assert len(rows) == 51 and {r["metric"] for r in rows} == {"throughput_tok_s", "ttft_ms", "tpot_ms"}
    for r in rows:
        w = r["plan"]["workload"]
        assert w["engine_version"] == "0.5.5.post3" and w["gpu_memory_utilization"] == 0.9
        assert r["plan"]["hardware"]["gpu"] == "GH200"
    c32 = [r for r in rows if r["source_url"].endswith("agg_n100_in512_out128_c32.jsonl")]
    assert {r["plan"]["workload"]["prompt_tokens"] for r in c32} == {265}
    assert {r["plan"]["workload"]["output_tokens"] for r in c32} == {62}
    assert next(r["value"] for r in c32 if r["metric"] == "tpot_ms") == pytest.approx(9.195)
    burst = [r for r in rows if r["source_url"].endswith("agg_local.jsonl")]
    assert len(burst) == 3 and all(r["plan"]["workload"]["load"] == "offline" for r in burst)
