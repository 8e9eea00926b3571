"""MXFP4 on a dense model (AMD Quark's *-MXFP4-Preview Llamas): every linear layer at 4.25 bits, not bf16.

Before, `mxfp4` only narrowed routed experts (gpt-oss's layout), so a dense Llama-3.1-405B in MXFP4 was priced
at bf16 (756 GiB) and a published one-MI355X run (VLLMPR355, vLLM PR #25135) came out as "vLLM would refuse
to start"."""

from __future__ import annotations

import pytest

from mlrig import quant
from mlrig.catalog.models import resolve_model
from mlrig.validation.runner import check
from tests.calibration_lookup import row


def test_dense_mxfp4_stores_every_linear_at_4_25_bits() -> None:
    arch = resolve_model("meta-llama/Llama-3.1-405B")
    p = arch.params()
    bits = quant.weight_bits_by_component(arch, "mxfp4")
    linear = p.attention + p.mlp_dense + p.experts_shared
    assert bits["linear"] == pytest.approx(linear * 4.25)  # OCP MX: 32 x FP4 + one E8M0 scale
    assert bits["lm_head"] == p.lm_head * 16  # Quark's quantization_config excludes lm_head
    # hand check: ~401.6 B linear parameters x 4.25 / 8 + 2 x 2.10 B (embedding, head) x 2 bytes ~ 222 GB
    assert quant.weight_bytes(arch, "mxfp4") / 1e9 == pytest.approx(222, rel=0.03)


def test_moe_mxfp4_still_keeps_the_rest_at_bf16() -> None:
    """gpt-oss ships only its experts in MXFP4; attention, router and head stay bf16 (model card)."""
    arch = resolve_model("openai/gpt-oss-120b")
    p = arch.params()
    bits = quant.weight_bits_by_component(arch, "mxfp4")
    rest = p.attention + p.mlp_dense + p.experts_shared
    assert bits["linear"] == pytest.approx(rest * 16 + p.experts_routed * 4.25)


def test_published_mi355x_405b_mxfp4_row_now_gets_a_speed() -> None:
    """VLLMPR355-0002: 'Median TPOT (ms): 76.05' at 64 users, Llama-3.1-405B MXFP4 on one MI355X (vLLM PR #25135)."""
    r = row("VLLMPR355-0002")
    assert r.value == 76.05 and r.metric == "tpot_ms"
    assert r.plan["hardware"] == {"gpu": "MI355X", "count": 1, "tensor_parallel": 1}
    c = check(r)
    assert c.predicted is not None, c.error  # was: weights (756 GiB at bf16) exceed the 287 GiB card


def test_benhamm_b200_row_reads_the_gist() -> None:
    """BENHAMMB200-0001: gpt-oss-120b, TP 8 on 8x B200, SGLang 0.5.8.post1, 'TPOT (c=1)' 2.41 ms."""
    r = row("BENHAMMB200-0001")
    assert (r.metric, r.value, r.split) == ("tpot_ms", 2.41, "holdout")
    assert r.plan["workload"]["engine"] == "sglang" and r.plan["workload"]["batch_size"] == 1
    assert r.plan["hardware"]["tensor_parallel"] == 8
