"""The serving-setup flags (`--ep`, `--eager`, `--num-scheduler-steps`, `--engine-version`, `--max-num-seqs`, ...:
PLAN-FORMAT's "Keys published runs need") mean the same on every command that takes a serving setup: `plan`,
`serve`, `compare`, `fit`, `sweep`, `recommend` and the web API all accept them and give the figure `plan`
gives for them (one definition: `mlrig.commands._common.SETUP_OPTIONS`)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

from mlrig.commands._common import SETUP_OPTIONS, setup_flag_table

# A MoE model on 2 x H100 SXM, vLLM 0.6.4: every flag below changes the decode speed or its notes.
MODEL, GPU = "qwen3-30b-a3b", "H100 SXM"
SETUP = ["--ep", "2", "--eager", "--engine-version", "0.6.4", "--num-scheduler-steps", "8", "--max-num-seqs", "64",
         "--gpu-memory-utilization", "0.85"]
SERVING_COMMANDS = ("plan", "serve", "compare", "fit", "sweep")


def run(*args: str) -> Any:
    from mlrig.cli import app

    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout


def plan_json(*args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(run("plan", MODEL, "--gpu", GPU, "-n", "2", "-c", "4k", *args, "--json"))
    return out


@pytest.fixture(scope="module")
def planned() -> dict[str, Any]:
    return plan_json(*SETUP)


def test_the_flags_change_plans_answer(planned: dict[str, Any]) -> None:
    """Without this, the equalities below would hold for commands that drop the flags."""
    plain = plan_json()
    assert planned["performance"]["decode_tok_s"] < 0.8 * plain["performance"]["decode_tok_s"]
    notes = " ".join(planned["notes"])
    assert "expert parallel 2" in notes and "no CUDA / HIP graphs" in notes and "multi-step" in notes


@pytest.mark.parametrize("command", SERVING_COMMANDS)
def test_every_serving_command_has_every_setup_flag(command: str) -> None:
    import typer.main

    from mlrig.cli import app

    click_app = typer.main.get_command(app)
    cmd = click_app.commands[command]  # type: ignore[attr-defined]
    flags = {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
    assert set(setup_flag_table()) <= flags


def test_recommend_and_the_web_api_take_the_same_flags() -> None:
    from mlrig.commands.advisor import SETUP_FLAGS
    from mlrig.web.schemas import CompareQuery, FitQuery, PlanFields, RecommendQuery, ServeQuery, SetupQuery

    assert set(SETUP_FLAGS) == set(setup_flag_table())
    assert set(SetupQuery.model_fields) == set(SETUP_OPTIONS)
    for query in (PlanFields, CompareQuery, ServeQuery, RecommendQuery, FitQuery):
        assert set(SETUP_OPTIONS) <= set(query.model_fields)


def test_compare_gives_plans_figures(planned: dict[str, Any]) -> None:
    rows = json.loads(run("compare", MODEL, "--gpu", GPU, "-n", "2", "-c", "4k", *SETUP, "--json"))
    got, want = rows[0]["result"], planned
    assert {**got["performance"], "other_engines": {}} == {**want["performance"], "other_engines": {}}
    assert got["memory"] == want["memory"] and got["notes"] == want["notes"]


def test_fit_gives_plans_figures(planned: dict[str, Any]) -> None:
    rows = json.loads(run("fit", MODEL, "--gpu", GPU, "-n", "2", "-c", "4k", "-q", "bf16", *SETUP, "--json"))
    assert rows[0]["performance"]["decode_tok_s"] == planned["performance"]["decode_tok_s"]
    assert rows[0]["memory"]["per_gpu_gib"] == planned["memory"]["per_gpu_gib"]


def test_sweep_gives_plans_figures(planned: dict[str, Any]) -> None:
    rows = list(csv.DictReader(io.StringIO(run("sweep", MODEL, "--gpu", "h100-sxm-80gb", "-n", "2", "-c", "4k",
                                               *SETUP))))
    assert len(rows) == 1 and not rows[0]["error"]
    assert float(rows[0]["decode_tok_s"]) == planned["performance"]["decode_tok_s"]
    assert float(rows[0]["per_gpu_gib"]) == planned["memory"]["per_gpu_gib"]


def test_serve_curve_is_plans_closed_loop() -> None:
    """`serve`'s curve at 8 users is `plan --load concurrency --batch 8` with the same flags."""
    out = json.loads(run("serve", MODEL, "--gpu", GPU, "-n", "2", "-c", "4k", "--concurrency", "8", *SETUP, "--json"))
    plan = plan_json("--load", "concurrency", "--batch", "8", *SETUP)  # one default request
    point = out["curve"][0]
    assert point["concurrency"] == 8
    assert point["throughput_tok_s"] == plan["performance"]["throughput_tok_s"]
    plain = json.loads(run("serve", MODEL, "--gpu", GPU, "-n", "2", "--concurrency", "8", "--json"))
    assert plain["curve"][0]["throughput_tok_s"] != point["throughput_tok_s"]


def test_recommend_prices_the_flags_as_plan(planned: dict[str, Any]) -> None:
    out = json.loads(run("recommend", "--model", MODEL, "--context", "4k", *SETUP, "--gpu", GPU, "--cloud-only",
                         "--json"))
    two = [o for o in out["options"] if o["gpus"] == 2 and o["gpu"] == "h100-sxm-80gb" and o["feasible"]]
    assert two
    assert two[0]["workloads"][0]["decode_tok_s"] == pytest.approx(planned["performance"]["decode_tok_s"], rel=1e-3)
    one = [o for o in out["options"] if o["gpus"] == 1 and o["gpu"] == "h100-sxm-80gb"]
    assert one and all("expert_parallel 2" in (o["excluded_reason"] or "") for o in one)  # EP 2 needs 2 GPUs


def test_web_api_takes_the_flags(planned: dict[str, Any]) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from mlrig.web import create_app

    client = TestClient(create_app(), base_url="http://127.0.0.1:8765")
    r = client.get("/api/plan", params={"model": MODEL, "gpu": GPU, "count": 2, "context": 4096, "ep": 2,
                                        "eager": True, "engine_version": "0.6.4", "num_scheduler_steps": 8,
                                        "max_num_seqs": 64, "gpu_memory_utilization": 0.85})
    assert r.status_code == 200, r.text
    assert r.json()["performance"] == planned["performance"] and r.json()["notes"] == planned["notes"]


@pytest.mark.parametrize("page", ["/plan", "/serve"])
def test_the_pages_have_an_input_for_every_setup_flag(page: str) -> None:
    """The "Serving setup" section (web/templates/_macros.html `setup_fields`) names every SETUP_OPTIONS key,
    so a page can ask what the API and the CLI take."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from mlrig.web import create_app

    html = TestClient(create_app(), base_url="http://127.0.0.1:8765").get(page).text
    missing = [name for name in SETUP_OPTIONS if f'name="{name}"' not in html]
    assert not missing, missing


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("argv", "words"), [
    (["serve", "llama-3.1-8b", "--gpu", "L40S", "--engine", "sglang", "--num-scheduler-steps", "4"],
     "num_scheduler_steps"),
    (["compare", "llama-3.1-8b", "--gpu", "L40S", "--engine", "llama.cpp", "--ep", "2", "-n", "2"], "expert"),
    (["recommend", "--model", "llama-3.1-8b", "--eager=yes"], "--eager takes no value"),
    (["recommend", "--model", "llama-3.1-8b", "--max-model-len", "lots"], "--max-model-len"),
    (["fit", "llama-3.1-8b", "--gpu", "L40S", "--max-model-len", "8q"], "--max-model-len"),
])
def test_bad_setup_flags_are_one_line_and_exit_2(argv: list[str], words: str) -> None:
    res = mlrig(*argv)
    assert res.returncode == 2, res.stdout + res.stderr
    assert words in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


@pytest.mark.parametrize(("gpu", "count", "same_as", "differs_from"), [
    ("L40S", 2, "pcie4-p2p", "pcie4-nop2p"),  # a data-centre card: P2P by default
    ("RTX 4090", 4, "pcie4-nop2p", "pcie4-p2p"),  # GeForce: host-staged by default
])
def test_every_command_takes_one_peer_to_peer_rule(gpu: str, count: int, same_as: str, differs_from: str) -> None:
    """The PCIe transport (interconnects.with_card_transport via hardware.plan_link) is one rule on every command:
    `recommend` (which takes no --interconnect: each option has the card's own links) prices the card's default
    as `plan` does, a bare 'pcie4' is that default, and `compare` / `fit` / `serve` price a forced '-nop2p' /
    '-p2p' as `plan` does. Qwen3-30B-A3B with vLLM at TP `count`: the all-reduces show in decode."""
    model = "qwen3-30b-a3b"

    def plan(*args: str) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(run("plan", model, "--gpu", gpu, "-n", str(count), "-c", "4k", "--engine",
                                             "vllm", *args, "--json"))
        return out

    default, forced = plan(), plan("--interconnect", differs_from)
    assert plan("--interconnect", "pcie4")["performance"] == default["performance"]
    assert plan("--interconnect", same_as)["performance"]["decode_tok_s"] == default["performance"]["decode_tok_s"]
    assert forced["performance"]["decode_tok_s"] != default["performance"]["decode_tok_s"]
    rec = json.loads(run("recommend", "--model", model, "--context", "4k", "--engine", "vllm", "--gpu", gpu,
                         "--cloud-only", "--json"))
    options = [o for o in rec["options"] if o["gpus"] == count and o["feasible"]]
    assert options
    assert options[0]["workloads"][0]["decode_tok_s"] == pytest.approx(default["performance"]["decode_tok_s"],
                                                                       rel=1e-3)
    flags = ["--gpu", gpu, "-n", str(count), "-c", "4k", "--engine", "vllm", "--interconnect", differs_from]
    rows = json.loads(run("compare", model, *flags, "--json"))
    assert rows[0]["result"]["performance"]["decode_tok_s"] == forced["performance"]["decode_tok_s"]
    fit = json.loads(run("fit", model, *flags, "-q", "bf16", "--json"))
    assert fit[0]["performance"]["decode_tok_s"] == forced["performance"]["decode_tok_s"]
    serve = json.loads(run("serve", model, *flags, "--concurrency", "8", "--json"))
    served = plan("--interconnect", differs_from, "--load", "concurrency", "--batch", "8")
    assert serve["curve"][0]["throughput_tok_s"] == served["performance"]["throughput_tok_s"]
