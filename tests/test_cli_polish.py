"""Rough edges a newcomer hits (issue 14 §3): token-count short forms, 80 columns, --version, examples in
--help, fits-first ordering, the assumed GPU, rounded JSON, and "how to make it fit"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlrig.commands._common import parse_token_count
from mlrig.errors import MlrigError

ROOT = Path(__file__).resolve().parents[1]


def mlrig(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True,
                          timeout=240, env=env, cwd=ROOT)  # examples/ paths are relative to the checkout


@pytest.mark.parametrize("text, binary, expected", [
    ("8192", True, 8192), ("8k", True, 8192), ("32K", True, 32768), ("128k", True, 131072),
    ("1M", True, 1048576), ("8_192", True, 8192), ("8,192", True, 8192), ("1.5k", True, 1536),
    ("1e11", False, 100_000_000_000), ("15T", False, 15_000_000_000_000), ("100B", False, 100_000_000_000),
    ("2k", False, 2000),
])
def test_token_counts(text: str, binary: bool, expected: int) -> None:
    assert parse_token_count(text, binary=binary) == expected


@pytest.mark.parametrize("junk", ["abc", "8kk", "", "-8k", "8 tokens", "1.3"])
def test_token_count_junk(junk: str) -> None:
    with pytest.raises(MlrigError, match="token count"):
        parse_token_count(junk, flag="--context")


def test_context_short_form_on_the_command_line() -> None:
    """`--context 128k` is 131,072 tokens: the KV cache of Llama 3.1 8B in bf16 at 128 KiB/token is 16 GiB."""
    # transformers allocates the KV cache the context needs (vLLM, the default here, books its whole pool)
    short = json.loads(mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--engine", "transformers", "--context",
                             "128k", "--json", "--no-limits").stdout)
    long = json.loads(mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--engine", "transformers", "--context",
                            "131072", "--json", "--no-limits").stdout)
    assert short["memory"] == long["memory"]
    assert short["memory"]["kv_cache_gib"] == pytest.approx(16.0, abs=0.01)


@pytest.mark.parametrize("args", [
    ["plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--context", "eight"],
    ["fit", "--gpu", "RTX 4090", "--context", "8q"],
    ["recommend", "--model", "llama-3.1-8b", "--context", "32x"],
])
def test_junk_token_count_is_one_line(args: list[str]) -> None:
    r = mlrig(*args)
    assert r.returncode == 2
    assert "--context" in r.stderr and "8k" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


# ---- --version, completion, examples at the end of --help ----

def test_version_from_package_metadata() -> None:
    from importlib.metadata import version

    r = mlrig("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"mlrig {version('mlrig')}"


def test_shell_completion_enabled() -> None:
    """Typer's completion options are on the root, and the completion protocol answers command and option
    names (what `mlrig --install-completion` wires into the shell)."""
    assert "--install-completion" in mlrig("--help", columns=120).stdout
    env = {**os.environ, "_MLRIG_COMPLETE": "complete_bash", "COMP_WORDS": "mlrig plan --con", "COMP_CWORD": "2"}
    code = "import sys; sys.argv = ['mlrig']; from mlrig.cli import main; main()"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "--context" in r.stdout.split()


def _all_commands() -> list[str]:
    from mlrig.cli import COMMAND_MODULES

    return sorted({*COMMAND_MODULES} - {"build"} | {"build check", "build suggest"})


def test_every_command_help_ends_with_examples() -> None:
    from mlrig.commands._examples import EXAMPLES

    assert set(EXAMPLES) == set(_all_commands())
    for command, lines in EXAMPLES.items():
        out = mlrig(*command.split(), "--help", columns=200).stdout
        assert "Examples:" in out, command
        for line in lines:
            assert line in out, (command, line)
            assert len(line) <= 76, line


def test_monitor_help_says_how_a_remote_prometheus_scrapes_it() -> None:
    """`--host` existed but its help said only 'loopback': how to scrape the box from elsewhere was not shown."""
    out = mlrig("monitor", "--help", columns=200).stdout
    assert "mlrig monitor --prometheus 9400 --host 0.0.0.0" in out and "HOSTNAME:PORT" in out


def _tour() -> list[list[str]]:
    from tests.test_readme_tour import tour_commands

    return tour_commands()


def _examples_not_in_tour() -> list[str]:
    import shlex

    from mlrig.commands._examples import EXAMPLES

    tour = {shlex.join(argv) for argv in _tour()}
    return [line for lines in EXAMPLES.values() for line in lines
            if shlex.join(shlex.split(line)) not in tour]


@pytest.mark.parametrize("line", _examples_not_in_tour())
def test_help_examples_run(line: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each example from the --help epilogs runs as written from the repository root (those the README
    tour runs are run by tests/test_readme_tour.py). `web` serves forever: it is started, answers, stopped."""
    import shlex
    import time
    import urllib.request

    from tests.test_readme_tour import ROOT, _free_port

    argv = shlex.split(line)
    env = {**os.environ, "COLUMNS": "100", "TERM": "dumb"}
    cmd = [sys.executable, "-m", "mlrig.cli", *argv[1:]]
    if argv[1] == "web":
        pytest.importorskip("fastapi")
        port = _free_port(int(argv[argv.index("--port") + 1]))
        cmd[cmd.index("--port") + 1] = str(port)
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, proc.communicate()[1].decode()
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
                        assert resp.status == 200
                    break
                except OSError:
                    assert time.monotonic() < deadline, "web did not answer within 60 s"
                    time.sleep(0.5)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        return
    if argv[1] == "monitor":  # serves forever: started, scraped, stopped (as the README tour runs it)
        from tests.test_readme_tour import _run_monitor

        _run_monitor(argv, ROOT, env)
        return
    if argv[1] == "trace":
        pytest.importorskip("torch")
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{line}\n{r.stderr[-2000:]}"
    assert r.stdout.strip(), line


# ---- 80 columns: nothing overflows, nothing important is cut ----

def _narrow(*args: str) -> str:
    r = mlrig(*args, columns=80)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, "\n".join(line for line in lines if len(line) > 80)
    assert "…" not in r.stdout
    return r.stdout


def _first_column(text: str) -> list[str]:
    """The first column of a borderless table, with names that fold onto following lines put back
    together (a continuation line is blank where the second column starts)."""
    names: list[str] = []
    start = None  # where the second column starts on the last row
    for line in text.splitlines():
        fields = line.split()
        if not fields or line.startswith(" "):
            continue
        if names and start is not None and not line[start:start + 8].strip():
            names[-1] += fields[0]
            continue
        names.append(fields[0])
        start = line.index(fields[1], len(fields[0])) if len(fields) > 1 else None
    return names


def _json_rows(*args: str) -> list[dict]:
    r = mlrig(*args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_fit_precisions_at_80_columns() -> None:
    from mlrig.commands._common import fmt_num

    args = ("fit", "llama-3.1-70b", "--gpu", "RTX 3090", "-n", "2")
    text = _narrow(*args)
    rows = _json_rows(*args)
    body = text.splitlines()
    for row in rows:
        assert row["precision"] in text
        if row["fits"]:
            line = next(ln for ln in body if ln.startswith(row["precision"] + " "))
            v = row["performance"]["decode_tok_s"]
            assert {fmt_num(v * 0.9995), fmt_num(v), fmt_num(v * 1.0005)} & set(line.split()), line
            assert f"{row['limits']['max_context_tokens']:,}" in line
    # what fits is listed first
    marks = [next(t[0] for t in ln.split() if t[0] in "✔✘") for ln in body  # after the engine, where one runs
             if ln.split() and ln.split()[0] in {r["precision"] for r in rows}]
    assert marks == sorted(marks, key=lambda m: m != "✔") and marks[0] == "✔" and "✘" in marks


def test_fit_models_at_80_columns() -> None:
    from mlrig.commands._common import fmt_num

    args = ("fit", "--gpu", "RTX 3090", "--context", "8k")
    text = _narrow(*args)
    rows = _json_rows(*args)
    fitting = [r for r in rows if r["fits"]]
    assert fitting and rows[0]["fits"]  # JSON order = table order: what fits first
    assert [r["fits"] for r in rows] == sorted((r["fits"] for r in rows), reverse=True)
    for r in fitting:  # JSON keeps 4 significant digits, the table 1 decimal: allow the last digit to differ
        v = r["performance"]["decode_tok_s"]
        assert {fmt_num(v * 0.9995), fmt_num(v), fmt_num(v * 1.0005)} & set(text.split()), v
    names = _first_column(text)
    for r in rows:  # long names fold onto a second line but are never cut
        assert r["model"].split("/")[-1] in names


def test_gpus_wide_at_80_columns() -> None:
    text = _narrow("gpus", "--wide")
    gpus = _json_rows("gpus")
    for g in gpus:
        assert g["id"] in text and g["source_date"] in text
    assert "NVLink GB/s" in text and "usable GiB" in text and "FP16 TF" in text
    _narrow("gpus")


def test_models_at_80_columns() -> None:
    text = _narrow("models")
    names = _first_column(text)
    for m in _json_rows("models"):
        assert m["id"] in names and f"{m['params'] / 1e9:.2f}" in text
    _narrow("models", "--wide")


def test_build_check_at_80_columns() -> None:
    text = _narrow("build", "check", "examples/build-2x3090.toml")
    flat = " ".join(text.split())
    assert "Puget Systems 2020" in flat and "sudo nvidia-smi -pl 280" in flat


@pytest.mark.parametrize("command", _all_commands())
def test_help_at_80_columns_names_every_option(command: str) -> None:
    """Every option's full name is in the --help text, at 80 columns."""
    import typer

    from mlrig.cli import app

    text = _narrow(*command.split(), "--help")
    group = typer.main.get_command(app)
    cmd = group
    for part in command.split():
        cmd = cmd.commands[part]  # type: ignore[attr-defined]
    for param in cmd.params:
        for opt in [*param.opts, *param.secondary_opts]:
            if opt.startswith("-"):
                assert opt in text, (command, opt)


def test_recommend_help_lists_workload_flags() -> None:
    from mlrig.commands.advisor import WORKLOAD_FLAGS

    text = _narrow("recommend", "--help")
    assert "[--model] M" in text
    for flag in WORKLOAD_FLAGS:
        assert f"  {flag} " in text, flag


# ---- plan output: failure lines, the assumed GPU ----

def test_single_gpu_finetune_has_no_failure_rate_lines() -> None:
    one = mlrig("plan", "mistral-7b", "--gpu", "RTX 4090", "--method", "qlora", columns=120).stdout
    assert "Checkpoints:" in one and "MTBF" not in one and "Young/Daly" not in one
    asked = mlrig("plan", "mistral-7b", "--gpu", "RTX 4090", "--method", "qlora", "--mtbf-h", "500",
                  columns=120).stdout
    assert "MTBF 500 h" in asked
    many = mlrig("plan", "llama-3.1-8b", "--gpu", "H100 SXM", "-n", "8", "--task", "pretrain", columns=120).stdout
    assert "Young/Daly" in many
    d = json.loads(mlrig("plan", "mistral-7b", "--gpu", "RTX 4090", "--method", "qlora", "--json").stdout)
    assert d["training"]["mtbf_hours"] > 0  # the JSON contract keeps the figures


def test_missing_gpu_says_which_it_assumed() -> None:
    text = mlrig("plan", "llama-3.1-8b", columns=120).stdout
    assert "no GPU given: assumed NVIDIA GeForce RTX 4090 (rtx-4090)" in text.splitlines()[1]
    d = json.loads(mlrig("plan", "llama-3.1-8b", "--json").stdout)
    assert any("assumed" in n and "rtx-4090" in n for n in d["notes"])
    named = json.loads(mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--json").stdout)
    assert not any("no GPU given" in n for n in named["notes"])


# ---- how to make it fit ----

def with_flags(args: list[str], flags: list[str]) -> list[str]:
    """`args` with a fix's `flags` applied as a user would: an option the fix sets replaces the one given
    (a one-value option given twice is an error), other flags are added."""
    changed = {w for w in flags if w.startswith("-")}
    out: list[str] = []
    skip = False
    for i, w in enumerate(args):
        if skip:
            skip = False
            continue
        if w in changed:
            skip = i + 1 < len(args) and not args[i + 1].startswith("-")
            continue
        out.append(w)
    return [*out, *flags]


@pytest.mark.parametrize("args, expect", [
    (["llama-3.1-8b", "--gpu", "RTX 3060 12GB", "--context", "32k"], ["--precision q6_k", "-n "]),
    (["llama-3.1-70b", "--gpu", "RTX 3090", "-n", "2", "--precision", "q5_k_m", "--context", "16k"],
     ["--precision q4_k_m", "--ngl", "-n 4"]),
    (["llama-3.1-8b", "--gpu", "RTX 4090", "--task", "finetune", "--method", "full"], ["--method lora", "--zero 3"]),
])
def test_fixes_each_make_the_plan_fit(args: list[str], expect: list[str]) -> None:
    """Every listed change, applied with its own flags, gives a plan that fits with exactly the memory per
    GPU the fix reports (the planner computed it); the precision offered is the best one that fits."""
    import shlex

    d = json.loads(mlrig("plan", *args, "--json").stdout)
    assert d["fits"] is False
    fixes = d["fixes"]
    flags = [f["flags"] for f in fixes]
    for needle in expect:
        assert any(needle in f for f in flags), (needle, flags)
    for fix in fixes:
        fixed = json.loads(mlrig("plan", *with_flags(args, shlex.split(fix["flags"])), "--json",
                                 "--no-limits").stdout)
        assert fixed["fits"] is True, fix
        assert fixed["memory"]["per_gpu_gib"] == pytest.approx(fix["per_gpu_gib"], abs=0.006), fix
        assert fixed["fixes"] == []
    if "--precision q6_k" in flags:  # the next format up the ladder does not fit
        assert json.loads(mlrig("plan", *args, "--precision", "q8_0", "--json").stdout)["fits"] is False


def test_fixes_in_text_and_absent_when_it_fits() -> None:
    text = mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 3060 12GB", "--context", "32k", columns=80).stdout
    assert "To make it fit" in text and "--precision q6_k" in text and "GiB/GPU" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    fits = mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--precision", "q4_k_m", columns=80).stdout
    assert "To make it fit" not in fits
    assert json.loads(mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--json").stdout)["fixes"] == []


# ---- JSON numbers ----

def test_round_floats_rule() -> None:
    from mlrig.jsonout import round_floats

    data = {"per_gpu_gib": 15.55449, "decode_tok_s": 31.4987, "ttft_ms": 130.4321, "tokens_to_train": 1e11,
            "kv_cache_capacity_tokens": 69745, "fits": True, "mfu": 0.412345, "x": [1234567.0, 0.0],
            "nested": {"weights_gib": 14.95651, "time_to_train_s": 123456.7, "tokens_to_train": 123456789.0}}
    out = round_floats(data)
    assert out == {"per_gpu_gib": 15.554, "decode_tok_s": 31.5, "ttft_ms": 130.4, "tokens_to_train": 1e11,
                   "kv_cache_capacity_tokens": 69745, "fits": True, "mfu": 0.4123, "x": [1235000.0, 0.0],
                   "nested": {"weights_gib": 14.957, "time_to_train_s": 123500.0, "tokens_to_train": 123456789.0}}
    assert isinstance(out["kv_cache_capacity_tokens"], int)
    # a byte count is exact: 32,768 B per token does not become 32,770
    assert round_floats({"draft_kv_bytes_per_token": 32768.0, "decode_tok_s": 32768.0}) == {
        "draft_kv_bytes_per_token": 32768.0, "decode_tok_s": 32770.0}


def test_round_floats_memo_gives_the_rule_exactly() -> None:
    """`round_floats` looks rounded values up in a memo (a batch meets the same ones often): whatever
    it has seen before, each float comes out as the rule itself rounds it, -0.0 and 0.0 apart."""
    import math
    import random

    from mlrig.jsonout import GIB_DECIMALS, round_floats

    rng = random.Random(7)
    values = [0.0, -0.0, 0.0, 5e-324, 1e308, 2.5, 0.15, 1234.5, 1234.5] + \
        [rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-12, 12) for _ in range(300)]
    for v in [*values, *values]:  # the second pass meets every value again
        out = round_floats({"decode_tok_s": v, "weights_gib": v, "step_bytes": v})
        want = (float(format(v, ".4g")), round(v, GIB_DECIMALS), v)
        got = (out["decode_tok_s"], out["weights_gib"], out["step_bytes"])
        assert [(math.copysign(1, x), x) for x in got] == [(math.copysign(1, x), x) for x in want], v



def test_round_floats_takes_a_remembered_value_without_calling_the_rounder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A float `round_floats` has met before is looked up in place (a batch rounds ~30 floats a line,
    most of them met before): `_rounded` runs only on a miss, and zeros, never remembered, still come
    out as the rule gives them."""
    from mlrig import jsonout

    data = {"decode_tok_s": 123.456789, "weights_gib": 4.56789, "step_bytes": 7.5,
            "memory": {"kv_cache_gib": 0.123456, "ttft_ms": 98.76543}}
    first = jsonout.round_floats(data)

    def refuse(v: float, rule: int) -> float:
        raise AssertionError(f"_rounded({v}, {rule}) called on a remembered value")

    monkeypatch.setattr(jsonout, "_rounded", refuse)
    assert jsonout.round_floats(data) == first == {
        "decode_tok_s": 123.5, "weights_gib": 4.568, "step_bytes": 7.5,
        "memory": {"kv_cache_gib": 0.123, "ttft_ms": 98.77}}


def test_plan_and_eval_json_are_rounded(tmp_path: os.PathLike[str]) -> None:
    def floats(o: object) -> list[tuple[str, float]]:
        found: list[tuple[str, float]] = []

        def walk(x: object, key: str = "") -> None:
            if isinstance(x, float):
                found.append((key, x))
            elif isinstance(x, dict):
                for k, v in x.items():
                    walk(v, k)
            elif isinstance(x, list):
                for v in x:
                    walk(v, key)
        walk(o)
        return found

    d = json.loads(mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--json").stdout)
    r = mlrig("eval", "examples/cases.jsonl")
    first = json.loads(r.stdout.splitlines()[0])
    assert mlrig("eval", "examples/cases.jsonl").stdout == r.stdout  # deterministic
    for key, value in floats(d) + floats(first):
        if key.endswith("_gib"):
            assert round(value, 3) == value, (key, value)
        else:
            assert float(f"{value:.4g}") == value, (key, value)
    assert isinstance(d["kv_cache_capacity_tokens"], int)


def test_fixes_on_unified_memory_offer_no_second_device() -> None:
    """A Mac's CPU layers share its memory and a second Mac is not a second GPU: only the precision."""
    d = json.loads(mlrig("plan", "llama-3.1-70b", "--gpu", "M2 Max 64GB", "--precision", "bf16", "--json").stdout)
    flags = [f["flags"] for f in d["fixes"]]
    assert flags and flags[0].startswith("--precision q")
    assert not any(f.startswith(("-n", "--ngl")) for f in flags), flags
