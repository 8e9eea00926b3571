"""SGLang 0.4.7.post1 sizes its KV pool by 0.4.8's card rule, not 0.4.7's TP table (engines.sglang_era_version).

Read in the PyPI wheels (2026-11-25): 0.4.7's server_args.py gives 0.88 at TP 1 on any card up to 81,920 MiB;
0.4.7.post1's reserves (9.5 + tp x pp / 2) GiB below 90 GiB, round((gpu_mem - reserved) / gpu_mem, 3), and takes
0.4.8's --chunked-prefill-size (2,048 below 35 GiB) and cuda_graph_max_bs (8 / 80 below 35 GiB) tiers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlrig.estimators.engines import (
    sglang_cuda_graph_max_bs,
    sglang_default_chunked_prefill,
    sglang_era_version,
    sglang_old_mem_fraction_static,
)
from mlrig.planner import evaluate

CAL = Path(__file__).resolve().parents[1] / "mlrig" / "data" / "calibration"


@pytest.mark.parametrize(("version", "era"), [
    ("0.4.7", "0.4.7"), ("0.4.7.post1", "0.4.8"), ("0.4.7post2", "0.4.8"), ("0.4.6.post2", "0.4.6.post2"),
    ("0.5", "0.5"), (None, None)])
def test_era_version(version: str | None, era: str | None) -> None:
    assert sglang_era_version(version) == era


def test_post1_defaults_differ_from_0_4_7() -> None:
    a100_mib = 40 * 1024  # nvidia-smi's 40,960 MiB
    assert sglang_old_mem_fraction_static(a100_mib, 1, 1, "0.4.7") == 0.88
    assert sglang_old_mem_fraction_static(a100_mib, 1, 1, "0.4.7.post1") == 0.75  # (40,960 - 10,240) / 40,960
    # a 32 GB RTX 5090 (31.4 GiB): above 0.4.7's 25,000 MiB line, below 0.4.7.post1's 35 GiB one
    assert sglang_default_chunked_prefill(31.4, "0.4.7") == 8192
    assert sglang_default_chunked_prefill(31.4, "0.4.7.post1") == 2048
    assert sglang_cuda_graph_max_bs(31.4, 1, "0.4.7") == 160
    assert sglang_cuda_graph_max_bs(31.4, 1, "0.4.7.post1") == 8


def test_livinfly_mistral_pool_hand_checked() -> None:
    """LIVINFLYA100 (fit; SGLang 0.4.7.post1, Mistral-7B-Instruct-v0.3, bf16, one A100-PCIE-40GB, catalog 39.82 GiB):
    mem_fraction_static round((40,775.7 - 10,240) / 40,775.7, 3) = 0.749; pool = 0.749 x 39.82 - 13.5005 (weights)
    - 0.25 (non-torch) = 16.0747 GiB; a token's KV 32 layers x 8 KV heads x 128 x 2 x 2 bytes = 128 KiB, so
    16.0747 x 8,192 = 131,684 tokens, 131,680 in whole 16-token blocks (was 174,416 at 0.88). The source's running
    batches imply ~118-125k (branch s37c-sglbatch, Little's law), so this is within ~10 %."""
    row = json.loads((CAL / "serving_sglang_livinfly_a100pcie.jsonl").read_text().splitlines()[0])
    assert row["id"] == "LIVINFLYA100-0001"
    res = evaluate(row["plan"])
    assert res.memory.weights_gib == pytest.approx(13.5005, abs=1e-3)
    assert res.memory.kv_cache_gib == pytest.approx(0.749 * 39.82 - 13.5005 - 0.25, abs=2e-3)
    assert res.kv_cache_capacity_tokens == 131_680
