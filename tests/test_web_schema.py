"""Property-based run of the web API's OpenAPI schema (schemathesis): no input the schema allows, and none
it does not, makes the server answer 5xx. Bounded: a few dozen examples per operation."""

from __future__ import annotations

import socket
from typing import Any

import pytest

pytest.importorskip("fastapi")
schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from mlrig.web import create_app  # noqa: E402

APP = create_app(allowed_hosts=["testserver"])  # the host name schemathesis's ASGI client sends
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"outgoing connection to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
def test_no_server_errors(case: Any) -> None:
    response = case.call_and_validate(checks=[not_a_server_error])
    assert response.status_code < 500, response.text


# ---- deeper: valid names with hostile numbers, so requests reach the planner and the estimators ---------

def _names() -> tuple[list[str], list[str]]:
    from mlrig.catalog.gpus import load_gpus
    from mlrig.catalog.models import load_model_catalog

    return [a.id for a in load_model_catalog()], [g.id for g in load_gpus()]


MODELS, GPUS = _names()

# Each number is absent (60 %), plausible (30 %) or hostile (10 %): many requests get through to the estimators.
def _mix(plausible: Any, hostile: Any) -> Any:
    return st.integers(0, 9).flatmap(lambda k: st.none() if k < 6 else plausible if k < 9 else hostile)


INTS = _mix(st.integers(1, 64), st.one_of(st.integers(-2, 10**7), st.sampled_from([0, 2**31, 10**12])))
FLOATS = _mix(st.floats(0.05, 1e3), st.one_of(st.floats(-1e3, 1e13, allow_nan=False), st.sampled_from([0.0, 1e30])))
PRECISIONS = st.one_of(st.none(), st.sampled_from(["bf16", "fp8", "q4_k_m", "int4", "nf4", "awq", "mxfp4", "fp4",
                                                   "bogus"]))
ENGINES = st.one_of(st.none(), st.sampled_from(["vllm", "llama.cpp", "trt-llm", "transformers", "mlc", "nope"]))


def _query(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@pytest.fixture(scope="module")
def client() -> Any:
    from fastapi.testclient import TestClient

    return TestClient(create_app(), base_url="http://127.0.0.1:8765")


@given(st.fixed_dictionaries({
    "model": st.sampled_from(MODELS), "gpu": st.sampled_from(GPUS), "precision": PRECISIONS, "engine": ENGINES,
    "task": st.one_of(st.none(), st.sampled_from(["inference", "finetune", "pretrain"])),
    "method": st.one_of(st.none(), st.sampled_from(["full", "lora", "qlora"])),
    "batch": INTS, "context": INTS, "prompt": INTS, "output": INTS, "count": INTS, "tp": INTS, "pp": INTS,
    "zero": INTS, "gpu_layers": INTS, "tokens": FLOATS, "gpu_memory_utilization": FLOATS,
    "storage_gb_s": FLOATS}))
@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_plan_never_5xx(client: Any, q: dict[str, Any]) -> None:
    r = client.get("/api/plan", params=_query(q))
    assert r.status_code < 500, (q, r.text)
    assert r.status_code in (200, 400, 422), (q, r.text)


@given(st.fixed_dictionaries({
    "model": st.sampled_from(MODELS), "gpu": st.sampled_from(GPUS), "precision": PRECISIONS, "engine": ENGINES,
    "min_tok_s": FLOATS, "max_ttft_ms": FLOATS, "count": INTS, "tp": INTS, "prompt": INTS, "output": INTS,
    "concurrency": st.one_of(st.none(), st.sampled_from(["1,2,4", "0", "1000000", "7,3,3"])),
    "draft_model": st.one_of(st.none(), st.sampled_from(MODELS)),
    "spec_k": st.one_of(st.none(), st.integers(-1, 64)), "acceptance": FLOATS}))
@settings(max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_serve_never_5xx(client: Any, q: dict[str, Any]) -> None:
    r = client.get("/api/serve", params=_query(q))
    assert r.status_code < 500, (q, r.text)


@given(st.fixed_dictionaries({
    "buy": st.one_of(st.none(), st.sampled_from(GPUS[:20]), st.sampled_from(["rtx-3090-used", "nope"])),
    "count": _mix(st.integers(1, 4), st.integers(-1, 99)), "price": FLOATS,
    "hours_per_month": st.integers(0, 9).flatmap(lambda k: st.floats(0, 730) if k < 8 else FLOATS),
    "years": FLOATS, "kwh_price": FLOATS, "utilization": FLOATS,
    "tokens_per_s": FLOATS, "spot": st.one_of(st.none(), st.booleans())}))
@settings(max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_cost_never_5xx(client: Any, q: dict[str, Any]) -> None:
    r = client.get("/api/cost", params=_query(q))
    assert r.status_code < 500, (q, r.text)
    if r.status_code == 200:  # the page draws the same figures: it must not fail either
        assert client.get("/cost", params=_query(q)).status_code < 500
