"""The calibration rows themselves (mlrig/data/calibration/*.jsonl): what a held-out claim, a memory
figure and a citation need to be trustworthy. The planner side is tests/test_validation_runner.py."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from mlrig.validation.runner import FIGURES, CalibrationRow, calibration_files, load_rows

MEMORY_METRICS = {"per_gpu_gib", "host_ram_gib"}
MEMORY_MEASURES = {"torch_allocated", "torch_reserved", "nvidia_smi", "engine_buffers", "unknown"}

# The project brief keeps these sources aside to test mlrig independently
# (shared/data/RESERVED-SOURCES.md). Rows from them may only be the ones given with the seed tables
# (seed_*.jsonl, converted from shared/data/calibration unchanged in source); no other file may cite them.
RESERVED_SOURCE_PATTERNS = (
    r"github\.com/(ggerganov|ggml-org)/llama\.cpp/(discussions|issues)",
    r"XiongjieDai/GPU-Benchmarks-on-LLM-Inference",
    r"mlc-ai/llm-perf-bench",
    r"turboderp/exllamav2",
    r"sgl-project/sglang/(blob|tree)/[^/]+/(benchmark|docs)",
    r"geerlingguy/ai-benchmarks",
    r"quack-ai/companion",
    r"dmatora/LLM-inference-speed-benchmarks",
    r"docs\.nvidia\.com/nim/benchmarking",
    r"mlcommons/inference_results_v4\.1",
    r"QwenLM/Qwen2\.5",
    r"casper-hansen/AutoAWQ",
    r"vllm-project/vllm/(issues|discussions)",
    r"LMCache/LMCache/issues",
    r"ollama/ollama/issues",
    r"THUDM/ChatGLM2-6B",
    r"baichuan-inc/Baichuan2",
    r"dphnAI/sonar",
    r"optimize-llm",
    r"unslothai/unsloth",
    r"pytorch/torchtitan",
    r"mosaicml/llm-foundry",
    r"Megatron-Bridge",
    r"NVIDIA/NeMo\b",
    r"NeMo/Automodel",
    r"NVIDIA/Megatron-LM",
    r"(microsoft|deepspeedai)/DeepSpeed",
    r"arxiv\.org/(abs|pdf)/(2205\.05198|2407\.21783|2204\.02311|2302\.13971|2205\.01068)",
    r"perf_train_gpu_one",
)


@pytest.fixture(scope="module")
def rows_by_file() -> dict[str, list[CalibrationRow]]:
    out: dict[str, list[CalibrationRow]] = {}
    for path in calibration_files():
        out[path.name] = load_rows_of(path)
    return out


def load_rows_of(path: Path) -> list[CalibrationRow]:
    return [CalibrationRow.model_validate(json.loads(line))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def source_tag(row_id: str) -> str:
    """`LITGPT-0007` -> `LITGPT`; the seed tables' older ids (`M-torchtune-011`, `m0097`) keep their prefix."""
    return re.sub(r"-?\d+$", "", row_id)


@pytest.fixture(scope="module")
def rows(rows_by_file: dict[str, list[CalibrationRow]]) -> list[CalibrationRow]:
    return [r for file_rows in rows_by_file.values() for r in file_rows]


def test_every_file_is_read_by_validation(rows: list[CalibrationRow]) -> None:
    assert [r.id for r in rows] == [r.id for r in load_rows()]


def test_a_source_is_held_out_whole(rows_by_file: dict[str, list[CalibrationRow]]) -> None:
    """A held-out figure means no row of that source chose a factor; one source cannot be split."""
    splits: dict[str, set[str]] = defaultdict(set)
    for file_rows in rows_by_file.values():
        for r in file_rows:
            splits[source_tag(r.id)].add(r.split)
    assert {tag: s for tag, s in splits.items() if len(s) > 1} == {}
    assert len(splits) > 20 and any("holdout" in s for s in splits.values())


def test_every_metric_is_a_figure_validation_reads(rows: list[CalibrationRow]) -> None:
    assert sorted({r.metric for r in rows} - set(FIGURES)) == []


def test_memory_rows_say_what_the_tool_measured(rows: list[CalibrationRow]) -> None:
    """Allocated, reserved and nvidia-smi figures differ by GiBs; validation compares like with like."""
    bad = [r.id for r in rows if r.metric in MEMORY_METRICS and r.memory_measure not in MEMORY_MEASURES]
    assert bad == []


def test_every_row_is_cited_with_a_date_and_software(rows: list[CalibrationRow]) -> None:
    bad = [r.id for r in rows
           if not r.source_url.startswith("https://")
           or not re.match(r"(20[12]\d(-[01]\d(-[0-3]\d)?)?|undated)", r.source_date)
           or not r.software.strip() or not r.source_note.strip()]
    assert bad == []


def test_reserved_sources_appear_only_in_the_given_seed_rows(
        rows_by_file: dict[str, list[CalibrationRow]]) -> None:
    hits = [(name, r.id, pat) for name, file_rows in rows_by_file.items() if not name.startswith("seed_")
            for r in file_rows for pat in RESERVED_SOURCE_PATTERNS if re.search(pat, r.source_url, re.IGNORECASE)]
    assert hits == []


@pytest.mark.parametrize("url", [
    "https://github.com/ggml-org/llama.cpp/discussions/4167",
    "https://github.com/casper-hansen/AutoAWQ/blob/abc/README.md",
    "https://arxiv.org/abs/2205.05198",
])
def test_the_reserved_patterns_catch_known_reserved_pages(url: str) -> None:
    assert any(re.search(p, url, re.IGNORECASE) for p in RESERVED_SOURCE_PATTERNS)


def test_allowed_sources_are_not_mistaken_for_reserved_ones() -> None:
    allowed = ["https://github.com/mlcommons/training_results_v4.0/tree/x/NVIDIA",
               "https://github.com/ggml-org/llama.cpp/blob/master/docs/backend/SYCL.md",
               "https://blog.vllm.ai/2025/11/11/intel-arc-pro-b.html"]
    assert [u for u in allowed if any(re.search(p, u, re.IGNORECASE) for p in RESERVED_SOURCE_PATTERNS)] == []


def test_every_rows_gpu_resolves_to_one_catalog_gpu(rows: list[CalibrationRow]) -> None:
    """Sources spell a card many ways ("RTX 4090", "NVIDIA GeForce RTX 4090", "rtx-4090"); each row's GPU goes
    through the catalog's name lookup (what validation runs), so every spelling must resolve, and the spellings of
    one card to the same catalog GPU (issue 10 §4: a row whose GPU did not resolve would be refused, not scored)."""
    from mlrig.errors import MlrigError

    unresolved, ids = [], {}
    for r in rows:
        try:
            ids[r.id] = r.catalog_gpu_id()
        except MlrigError as exc:
            unresolved.append(f"{r.id}: {exc}")
    assert not unresolved, unresolved[:5]
    spelled: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        spelled[ids[r.id]].add(str(r.plan["hardware"].get("gpu")))
    assert {"RTX 4090", "NVIDIA GeForce RTX 4090"} <= spelled["rtx-4090"]
    assert {"NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"} <= spelled["a100-sxm-80gb"]


def test_every_rows_engine_version_is_one_its_engine_reads(rows: list[CalibrationRow]) -> None:
    """A version label no parser reads is refused by the planner (engines.engine_version_problem); a row must say
    its release in a form the engine's parser takes, or leave it out (README: when the source does not state it)."""
    from mlrig.estimators.engines import engine_version_problem

    bad = [(r.id, w.get("engine"), w.get("engine_version")) for r in rows
           for w in [r.plan.get("workload", {})] if engine_version_problem(w.get("engine"), w.get("engine_version"))]
    assert not bad, bad[:5]
