"""The serving front end's serial stage on a desktop / workstation host.

- A wave's member of rank k waits (k - 1) x 3.5 ms for the requests ahead of it to cross the Python front end
  (efficiency.FRONTEND_SERIAL_S_PER_REQUEST, serving.front_end_queue_s) on a server; on a host with a GeForce or
  workstation card 0.7 of that (serving.host_serial_rel, efficiency.DESKTOP_HOST_SERIAL_REL: WAYNETRT's same client
  measures ~3.2 ms per request on its H100 server and ~1.7-2.1 ms on its RTX PRO 6000 workstation).
  Hand checks: AZIR5070TI-0110 (fit: 64 users of a 12-token uncached prompt, vLLM 0.13 NVFP4 on an RTX 5070 Ti;
  measured 63.6 ms): the median member is rank 32.5, 31.5 x 3.5 x 0.7 = 77.175 ms, longer than the GPU's wave
  (~35 ms), plus the 12 ms V1 front end: 89.175 ms (122.25 ms before, +92 %). WAYNETRT-0239 (128 users, vLLM 0.18
  FP8 on the RTX PRO 6000; 164.6 ms): 63.5 x 2.45 + 12 = 167.575 ms (234.25 before). WAYNETRT-0035 (the same client
  and load on an H100 server; 213.0 ms) keeps 63.5 x 3.5 + 12 = 234.25 ms.
"""

from __future__ import annotations

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators import serving
from mlrig.planner import evaluate, resolve_plan
from mlrig.validation.runner import CalibrationRow, load_rows


def _rows() -> dict[str, CalibrationRow]:
    return {r.id: r for r in load_rows() if r.id.startswith(("AZIR5070TI", "WAYNETRT"))}


def _ttft_ms(row: CalibrationRow) -> float:
    perf = evaluate(row.plan).performance
    assert perf is not None and perf.ttft_ms is not None
    return perf.ttft_ms


def _resolved(gpu: str):  # type: ignore[no-untyped-def]
    work = {"engine": "vllm", "precision": "bf16", "load": "concurrency", "batch_size": 64}
    return resolve_plan({"model": "llama-3.1-8b", "workload": work, "hardware": {"gpu": gpu}})[0]


def test_serial_stage_by_host_class() -> None:
    assert serving.front_end_queue_s(_resolved("h100-sxm-80gb"), 32.5) == pytest.approx(31.5 * 3.5e-3)
    assert serving.front_end_queue_s(_resolved("l4"), 32.5) == pytest.approx(31.5 * 3.5e-3)  # a datacentre card
    assert serving.front_end_queue_s(_resolved("rtx-4090"), 32.5) == pytest.approx(31.5 * 3.5e-3 * 0.7)
    assert serving.front_end_queue_s(_resolved("rtx-pro-6000-blackwell-maxq"), 32.5) == pytest.approx(
        31.5 * 3.5e-3 * 0.7)
    assert serving.front_end_queue_s(_resolved("rtx-4090"), 1.0) == 0.0  # the first of a wave waits for nobody


@pytest.mark.parametrize(("rid", "ttft_ms", "measured_ms"), [
    ("AZIR5070TI-0110", 89.175, 63.6),  # desktop: 31.5 x 2.45 + 12
    ("WAYNETRT-0239", 167.575, 164.6),  # workstation: 63.5 x 2.45 + 12
    ("WAYNETRT-0035", 234.25, 213.0),  # server, unchanged: 63.5 x 3.5 + 12
])
def test_wave_ttft_through_the_host_serial_stage(rid: str, ttft_ms: float, measured_ms: float) -> None:
    row = _rows()[rid]
    assert row.value == measured_ms
    assert _ttft_ms(row) == pytest.approx(ttft_ms, abs=0.01)


def test_desktop_rows_need_the_faster_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the server's 3.5 ms the desktop rows above go +92 % (AZIR5070TI-0110) and +42 % (WAYNETRT-0239)."""
    rows = _rows()
    monkeypatch.setattr(eff, "DESKTOP_HOST_SERIAL_REL", 1.0)
    assert _ttft_ms(rows["AZIR5070TI-0110"]) == pytest.approx(122.25, abs=0.01)
    assert _ttft_ms(rows["WAYNETRT-0239"]) == pytest.approx(234.25, abs=0.01)
