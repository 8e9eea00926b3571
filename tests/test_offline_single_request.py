"""One request sent alone: its run lasts its own TTFT and O - 1 TPOTs, whatever the engine or the lengths
(performance.static_inference, serving.varied_offline_throughput / varied_drain_s, serving.tgi_offline_burst)."""

from __future__ import annotations

import json

import pytest

from mlrig.planner import evaluate
from mlrig.validation import calibration_dir

_ENGINES = (("vllm", None), ("vllm", "0.6.3"), ("sglang", None), ("trt-llm", None), ("trt-llm", "0.10.0"),
            ("lmdeploy", None), ("tgi", "2.0.0"), ("tgi", None), ("transformers", None), ("llama.cpp", None))


@pytest.mark.parametrize(("engine", "version"), _ENGINES)
@pytest.mark.parametrize(("lengths", "cap"), [("fixed", None), ("varied", None), ("varied", 400), ("uniform", None)])
@pytest.mark.parametrize("load", ["offline", "static"])
def test_one_request_lasts_its_ttft_and_o_minus_1_tpots(engine: str, version: str | None, lengths: str,
                                                        cap: int | None, load: str) -> None:
    """Invariant: a single request's throughput is O / (TTFT + (O - 1) x TPOT), its first token coming with its
    prefill. The plan's O is that request's length, so varied lengths change nothing for it (before: an
    exponential drain of O ln 2 iterations put it 40 % faster; TGI's spread made it half as long)."""
    w: dict[str, object] = {"precision": "bf16", "engine": engine, "prompt_tokens": 500, "output_tokens": 300,
                            "load": load, "lengths": lengths}
    w["num_requests" if load == "offline" else "batch_size"] = 1
    if version:
        w["engine_version"] = version
    if cap:
        w["max_output_tokens"] = cap
    perf = evaluate({"model": "llama-3-8b", "workload": w, "hardware": {"gpu": "H100 SXM"}}).performance
    assert perf is not None and perf.ttft_ms is not None and perf.tpot_ms is not None
    assert perf.throughput_tok_s == pytest.approx(300 / ((perf.ttft_ms + 299 * perf.tpot_ms) / 1e3), rel=1e-9)


def test_lhl_405b_single_request_row_is_its_own_ttft_and_tpot() -> None:
    """LHLMI300X-0001 (fit: vLLM 0.6.3 on 8x MI300X, Llama-3.1-405B, one request of 80 + 66 tokens): measured
    66 tokens over 4.53 s, 0.240 s TTFT + 65 x 65.9 ms TPOT = 4.52 s. The plan's own TTFT and TPOT now give its
    throughput (where the drain of O ln 2 iterations gave 28.5 tok/s): by hand 66 / (0.237 s + 65 x 53.48 ms) =
    17.8 tok/s, the 237 ms TTFT from efficiency.VLLM_V0_TP_PREFILL_HOST_LAYER_S_AMD (20.4 with 149 ms at 1.0 ms per
    layer), the 53.5 ms TPOT with the weights at hipBLASLt's rate (efficiency.VLLM_ROCM_HIPBLASLT_MATVEC_REL; 48.25
    ms and 19.6 tok/s before); what is left of its error is the TPOT's (53.5 ms predicted, 65.9 measured)."""
    rows = [json.loads(line) for line in (calibration_dir() / "serving_rocm_vllm063_lhl_mi300x.jsonl").open()]
    row = next(r for r in rows if r["id"] == "LHLMI300X-0001")
    perf = evaluate(row["plan"]).performance
    assert perf is not None and perf.ttft_ms is not None and perf.tpot_ms is not None
    assert perf.throughput_tok_s == pytest.approx(66 / ((perf.ttft_ms + 65 * perf.tpot_ms) / 1e3), rel=1e-9)
    assert perf.throughput_tok_s == pytest.approx(17.8, rel=0.02)
