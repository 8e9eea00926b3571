"""The command line as a user meets it: exit codes, one-line errors, JSON shapes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args, needle", [
    (["plan", "llama-3.1-8b", "--gpu", "RTX 4099"], "RTX 4090"),
    (["plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--batch", "-3"], "-b/--batch"),
    (["plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--precision", "q9_z"], "q9_z"),
    (["plan", "no-such-model-at-all", "--gpu", "RTX 4090"], "no-such-model-at-all"),
    (["plan", "--file", "/nonexistent/plan.toml"], "not found"),
    (["plan"], "give a MODEL"),
    # -m is the model in compare and fit but --method in plan: the error says where the model goes
    (["plan", "-m", "llama-3.1-8b", "--gpu", "RTX 4090"], "give the model as the first argument"),
])
def test_bad_input_exit_2_one_line(args: list[str], needle: str) -> None:
    r = mlrig(*args)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_plan_json_contract() -> None:
    r = mlrig("plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA GeForce RTX 4090", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert set(d) >= {"id", "error", "fits", "memory", "kv_cache_capacity_tokens", "performance"}
    assert d["memory"]["gpu_capacity_gib"] == pytest.approx(23.99, abs=0.05)
    assert d["fits"] is True


def test_plan_training_run_json_and_table() -> None:
    args = ("plan", "llama-3.1-8b", "--gpu", "H100 SXM", "--count", "8", "--task", "pretrain", "--tokens", "1e11")
    d = json.loads(mlrig(*args, "--json", "--storage-gb-s", "5", "--mtbf-h", "200").stdout)
    run = d["training"]
    assert run["storage_gb_s"] == 5.0 and run["mtbf_hours"] == 200.0 and run["tokens_to_train"] == 1e11
    # JSON floats keep 4 significant digits (docs/PLAN-FORMAT.md)
    assert run["checkpoint_interval_s"] == pytest.approx((2 * run["checkpoint_write_s"] * 200 * 3600) ** 0.5, rel=2e-3)
    assert d["performance"]["hfu"] >= d["performance"]["mfu"]
    table = mlrig(*args).stdout
    assert "compute-optimal" in table and "Checkpoints:" in table and "Young/Daly" in table
    inference = json.loads(mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--json").stdout)
    assert inference["training"] is None


def test_plan_human_output() -> None:
    r = mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 3090", "--precision", "q4_k_m")
    assert r.returncode == 0, r.stderr
    assert "fits" in r.stdout and "GiB" in r.stdout


def test_command_map_matches_what_modules_register() -> None:
    """`main()` registers only the module COMMAND_MODULES names; a command missing from the map (or
    mapped to the wrong module) would fall back to the full app or vanish, so check both directions."""
    import pkgutil

    import typer

    import mlrig.commands as pkg
    from mlrig.cli import COMMAND_MODULES, build_app

    seen: dict[str, str] = {}
    for mod in pkgutil.iter_modules(pkg.__path__):
        module = __import__(f"mlrig.commands.{mod.name}", fromlist=["register"])
        if not hasattr(module, "register"):
            continue
        probe = typer.Typer()
        module.register(probe)
        names = [c.name for c in probe.registered_commands] + [g.name for g in probe.registered_groups]
        for name in names:
            assert name is not None
            seen[name] = mod.name
    assert seen == COMMAND_MODULES
    one = build_app("plan")
    assert [c.name for c in one.registered_commands] == ["plan"]


def test_lazily_built_app_still_parses_subcommands() -> None:
    """With one command registered, `mlrig plan MODEL` must still treat `plan` as the command."""
    r = mlrig("plan", "llama-3.1-8b", "--gpu", "4090", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["fits"] is True
    r = mlrig("build", "check", "--help")
    assert r.returncode == 0 and "Check BUILD" in r.stdout
    r = mlrig("plann", "x")
    assert r.returncode == 2 and "Did you mean 'plan'" in r.stderr
