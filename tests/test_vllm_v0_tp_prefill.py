"""vLLM V0's eager prefill at TP > 1 (performance.vllm_v0_prefill_host_layer_s), checked on AccelMark's vLLM 0.7.3
Llama-3-70B rows through the product path (mlrig.validation.runner.check -> mlrig.planner.evaluate)."""

from __future__ import annotations

import pytest
from calibration_lookup import ratio

from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import vllm_v0_prefill_host_layer_s


def test_host_term_only_for_v0_under_tensor_parallelism() -> None:
    assert vllm_v0_prefill_host_layer_s("vllm", "0.7.3", 8) == eff.VLLM_V0_TP_PREFILL_HOST_LAYER_S > 0
    assert vllm_v0_prefill_host_layer_s("vllm", "0.7.3", 1) == 0.0  # one GPU: hidden under the GPU's work
    assert vllm_v0_prefill_host_layer_s("vllm", "0.8.0", 8) == 0.0  # V1
    assert vllm_v0_prefill_host_layer_s("vllm", None, 8) == 0.0  # current release: V1
    assert vllm_v0_prefill_host_layer_s("sglang", "0.4.0", 8) == 0.0


@pytest.mark.parametrize("row_id", ["ACCELMARK-0108", "ACCELMARK-0086", "ACCELMARK-0097"])
def test_one_user_ttft_at_tp8_is_nearly_gpu_independent(row_id: str) -> None:
    # measured 77 / 82 / 82 ms on 8x H200 / A100 40GB / A800; without the term 0.45 / 0.80 / 0.77 of it
    assert 0.85 < ratio(row_id) < 1.15


@pytest.mark.parametrize("row_id", ["ACCELMARK-0002", "ACCELMARK-0014", "ACCELMARK-0026"])
def test_one_gpu_rows_unchanged(row_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with_term = ratio(row_id)
    monkeypatch.setattr(eff, "VLLM_V0_TP_PREFILL_HOST_LAYER_S", 0.0)
    assert ratio(row_id) == pytest.approx(with_term, rel=1e-9)


def test_prefill_passes_stall_decodes_under_load() -> None:
    # 8x H200 at 5 and 10 req/s: measured TPOT 38.8 / 58.8 ms; the V0 prefill passes between the decode passes
    # take longer at TP 8, so the TPOT rises (0.39 / 0.38 of the measured without the term)
    assert ratio("ACCELMARK-0113") > 0.5
    assert ratio("ACCELMARK-0115") > 0.6
