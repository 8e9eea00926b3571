"""SGLang serving on HBM (issue 10, branch s37-sgl): the burst admission rule read in SGLang's scheduler, and the
published rows added for it (LIVINFLYA100, KVCACHEDSGL, LLMTRACKDSV3), checked against the figures of their sources."""

from __future__ import annotations

import pytest

from mlrig.estimators.serving import sglang_burst_admitted
from mlrig.validation.runner import CalibrationRow, load_rows


@pytest.mark.parametrize(("kv", "prompt", "out", "admitted"), [
    # PrefillAdder (schedule_policy.py, read at 0.4.0, 0.4.6, 0.4.8 and 0.5.5.post1): each request of an idle
    # engine's burst reserves its prompt and 0.7 of its max_new_tokens once it runs. 174,416 tokens (a 7B model's
    # pool on an A100 40GB, LIVINFLYA100) over 513 + 0.7 x 509 = 869.3: 200 x 869.3 = 173,860 fits, 201 do not.
    (174_416, 513, 509, 200),
    # max_new_tokens is clipped at 4,096 for the estimate (CLIP_MAX_NEW_TOKENS_ESTIMATION): 100 + 0.7 x 4,096 =
    # 2,967.2 a request, 58 x 2,967.2 = 172,097.6 fits, 59 (175,064.8) do not.
    (174_416, 100, 10_000, 58),
    # a pool smaller than one request's reservation still runs that request
    (500, 513, 509, 1),
])
def test_sglang_burst_admitted_hand_values(kv: int, prompt: int, out: int, admitted: int) -> None:
    assert sglang_burst_admitted(kv, prompt, out) == admitted


def _rows() -> dict[str, CalibrationRow]:
    return {r.id: r for r in load_rows() if r.id.startswith(("LIVINFLYA100-", "KVCACHEDSGL-", "LLMTRACKDSV3-"))}


def test_new_sglang_hbm_rows_quote_their_sources() -> None:
    rows = _rows()
    assert len(rows) == 64
    # Livinfly/MLsys-Learning-Record-2 @ f7b9c79, sglang_online_Mistral-7B-Instruct_no.jsonl line 1 (rate 1):
    # median_ttft_ms 77.7055, 300 requests, totals 152,612 in / 160,347 out (means 508.7 / 534.5)
    r = rows["LIVINFLYA100-0002"]
    assert r.metric == "ttft_ms" and r.value == pytest.approx(77.71)
    w = r.plan["workload"]
    assert (w["load"], w["request_rate"], w["num_requests"], w["prompt_tokens"], w["output_tokens"]) == (
        "rate", 1.0, 300, 509, 534)
    assert w["engine_version"] == "0.4.7.post1" and r.plan["hardware"]["gpu"] == "NVIDIA A100-PCIE-40GB"
    # ovg-project/kvcached @ f5330bc README, 'Request rate = 32', without kvcached: median TTFT 2,308.73 ms
    assert rows["KVCACHEDSGL-0008"].value == pytest.approx(2308.73)
    assert rows["KVCACHEDSGL-0007"].value == pytest.approx(2192.53)  # output tok/s
    # llm-tracker DeepSeek-V3 at TP 16 over two nodes, 64 users: 520.29 output tok/s
    assert rows["LLMTRACKDSV3-0001"].value == pytest.approx(520.29)


def test_new_sglang_rows_are_fit_and_their_anomalies_are_flagged() -> None:
    rows = _rows()
    assert {r.split for r in rows.values()} == {"fit"}
    flagged = {i for i, r in rows.items() if r.anomaly}
    # every TP-16 row (network not stated), the median-ITL rows that stand for no TPOT, and the 256/256 burst
    # that was the server's first run (5x the same run on the radix-on server)
    assert flagged == ({f"LLMTRACKDSV3-{i:04d}" for i in range(1, 13)}
                       | {"KVCACHEDSGL-0003", "KVCACHEDSGL-0006", "KVCACHEDSGL-0009"}
                       | {"LIVINFLYA100-0016", "LIVINFLYA100-0017"})
