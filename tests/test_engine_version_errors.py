"""An engine version mlrig cannot read is refused, not priced silently as the current release (issue 10 §3):
on the command line and in a plan file one line naming the forms the engine takes, exit status 2, no
traceback; in an `eval` batch the bad case is reported on its line and the others are answered. Every form the
engines' parsers read (engines.parse_version) is still taken."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlrig.errors import MlrigError
from mlrig.estimators.engines import engine_version_problem, parse_version
from mlrig.planner import evaluate, parse_plan

PLAN = {"model": {"name": "llama-3.1-8b"}, "hardware": {"gpu": "RTX 4090"}}


def _plan(engine: str | None, version: str, gpu: str = "RTX 4090", task: str = "inference") -> dict[str, object]:
    workload: dict[str, object] = {"engine_version": version, "task": task}
    if engine:
        workload["engine"] = engine
    return {**PLAN, "hardware": {"gpu": gpu}, "workload": workload}


# (engine, a version of it users write) for every engine mlrig dates by release
GOOD = [("vllm", "0.6.3"), ("vllm", "v0.8.0"), ("vllm", "0.7.4.dev181"), ("vllm", "0.6.3.post1"),
        ("vllm", "0.10.1+flashinfer"), ("sglang", "0.4.3.post2"), ("sglang", "0.5"), ("lmdeploy", "0.6.0"),
        ("lmdeploy", "0.6.0+pytorch"), ("lmdeploy-pytorch", "0.7.1"), ("llama.cpp", "b4000"),
        ("llama.cpp", "2024-06"), ("llama.cpp", "b6000+vulkan"), ("ollama", "0.5.7"), ("trt-llm", "0.12"),
        ("trt-llm", "1.0+tensorrt"), ("trt-llm", "1.0.0rc4"), ("transformers", "4.44.2"),
        ("transformers", "2024-06"), ("exllamav2", "0.2.4"), ("tgi", "3.0.1"), ("tinychat", "2.0"),
        (None, "0.6.3")]
BAD = ["garbage", "latest", "c9f683e", "+vulkan", "v", "0.x"]
ENGINES = ["vllm", "sglang", "lmdeploy", "lmdeploy-pytorch", "llama.cpp", "ollama", "lm-studio", "trt-llm",
           "transformers", "exllamav2", "tgi", "tinychat", "mlc"]


@pytest.mark.parametrize(("engine", "version"), GOOD)
def test_every_form_the_engines_take_is_read(engine: str | None, version: str) -> None:
    assert parse_version(version) is not None
    assert engine_version_problem(engine, version) is None
    parse_plan(_plan(engine, version))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("version", BAD)
def test_a_label_no_parser_reads_is_refused_for_every_dated_engine(engine: str, version: str) -> None:
    with pytest.raises(MlrigError) as err:
        parse_plan(_plan(engine, version))
    msg = str(err.value)
    assert "\n" not in msg and repr(version) in msg and "engine_version" in msg
    assert "leave it out for the current release" in msg


def test_mlx_and_the_message_names_its_own_forms() -> None:
    with pytest.raises(MlrigError, match=r"mlx-lm release such as '0\.20\.4'.*current release \(~0\.32\)"):
        evaluate(_plan("mlx", "garbage", gpu="M2 Max 64GB"))
    assert evaluate(_plan("mlx", "mlx-lm 0.20.4", gpu="M2 Max 64GB")).error is None
    with pytest.raises(MlrigError, match="build such as 'b4000'"):
        parse_plan(_plan("llama.cpp", "garbage"))
    with pytest.raises(MlrigError, match=r"'0\.6\.0\+pytorch'"):
        parse_plan(_plan("lmdeploy", "garbage"))


def test_engines_without_releases_keep_their_labels() -> None:
    """gpt-fast runs from a commit and torchao's flow is named in its label; training frameworks mlrig does not
    date by release (fms-fsdp, OLMo-core) keep the free text their calibration rows carry."""
    assert engine_version_problem("gpt-fast", "torchao adc78b7") is None
    assert engine_version_problem("gpt-fast", "c9f683e") is None
    assert engine_version_problem("fms-fsdp", "PyTorch nightly (early 2024), FSDP1") is None
    assert engine_version_problem("vllm", None) is None


def _run(args: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MLRIG_HOME": str(tmp / "home"), "XDG_CONFIG_HOME": str(tmp / "c")}
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def test_cli_flag_and_plan_file_exit_2_with_one_line(tmp_path: Path) -> None:
    flag = _run(["plan", "llama-3.1-8b", "-g", "RTX 4090", "--engine", "vllm", "--engine-version", "garbage"],
                tmp_path)
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text('[model]\nname = "llama-3.1-8b"\n[workload]\nengine = "sglang"\nengine_version = "garbage"\n'
                         '[hardware]\ngpu = "H100 SXM"\n')
    file = _run(["plan", "-f", str(plan_file)], tmp_path)
    for proc, engine in ((flag, "vllm"), (file, "sglang")):
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and f"cannot read 'garbage' as a version of {engine}" in lines[0]


def test_eval_reports_the_bad_case_and_finishes_the_rest(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    # good-2 and bad have one shape: a batch validates such a case section by section (grid.parse_member)
    rows = [{**_plan("vllm", "0.6.3"), "id": "good-1"}, {**_plan("llama.cpp", "b4000"), "id": "good-2"},
            {**_plan("llama.cpp", "garbage"), "id": "bad"}, {**_plan("llama.cpp", "b4001"), "id": "good-3"}]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = _run(["eval", str(cases)], tmp_path)
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    assert proc.returncode == 1 and [r["id"] for r in out] == ["good-1", "good-2", "bad", "good-3"]
    assert all(out[i]["error"] is None and out[i]["performance"]["decode_tok_s"] > 0 for i in (0, 1, 3))
    assert "cannot read 'garbage' as a version of llama.cpp" in out[2]["error"]


@pytest.mark.parametrize(("engine", "version", "kind"), [
    ("vllm", "b4000", "build"), ("sglang", "2024-11", "month"), ("llama.cpp", "0.3.5", "release"),
    ("trt-llm", "2024-06", "month")])
def test_a_form_the_engines_rules_do_not_read_is_said(engine: str, version: str, kind: str) -> None:
    """A version that parses but is of a kind the engine's release rules never read (a llama.cpp build given to vLLM,
    a month to SGLang) is priced as the current release, and the plan says so."""
    gpu = "H100 SXM" if engine != "llama.cpp" else "RTX 4090"
    notes = evaluate(_plan(engine, version, gpu=gpu)).notes
    said = [n for n in notes if n.startswith(f"engine_version {version!r} is a {kind}")]
    assert len(said) == 1 and "priced as its current release" in said[0], notes


@pytest.mark.parametrize(("engine", "version"), [
    ("vllm", "0.6.3"), ("llama.cpp", "b4000"), ("llama.cpp", "2024-06"), ("tgi", "2024-12"), ("ollama", "0.5.7"),
    ("lmdeploy", "0.6.0+pytorch")])
def test_forms_the_rules_read_carry_no_such_note(engine: str, version: str) -> None:
    gpu = "H100 SXM" if engine in ("vllm", "tgi", "lmdeploy") else "RTX 4090"
    assert not [n for n in evaluate(_plan(engine, version, gpu=gpu)).notes if n.startswith("engine_version '")]
