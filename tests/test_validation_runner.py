"""`mlrig validate` and the per-figure validation object: every calibration row through the planner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from mlrig.commands.validate import verdict
from mlrig.validation.runner import load_rows, run, scopes, target
from mlrig.validation.scopes import MIN_ROWS, ScopeRecord, figure_validation, scope_table

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def checked():  # type: ignore[no-untyped-def]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return run()


def test_rows_are_well_formed_and_ids_unique() -> None:
    rows = load_rows()
    assert len(rows) > 2000
    ids = [r.id for r in rows]
    assert len(ids) == len(set(ids))
    assert all(r.source_url.startswith("http") for r in rows)


def test_no_row_crashes_the_planner(checked) -> None:  # type: ignore[no-untyped-def]
    """A refusal is one of mlrig's own errors (the runner catches only MlrigError: a bug would raise)."""
    assert not [c for c in checked if c.error and c.error.startswith("internal error")]


def test_packaged_scope_table_is_what_the_planner_gives_today(checked) -> None:  # type: ignore[no-untyped-def]
    """The table behind every plan's `validation` object must be regenerated when a formula changes
    (`mlrig validate --write`): figures shown to users are the current code's."""
    fresh = {r.key: r for r in scopes(checked)}
    shipped = scope_table()
    assert set(fresh) == set(shipped), "run `mlrig validate --write` and commit mlrig/data/validation_scopes.json"
    for key, rec in fresh.items():
        assert shipped[key].rows == rec.rows, key
        assert shipped[key].median_error == pytest.approx(rec.median_error, abs=2e-4), key
        assert shipped[key].p90_error == pytest.approx(rec.p90_error, abs=2e-4), key


def test_default_band_is_not_narrower_than_the_rows_say(checked) -> None:  # type: ignore[no-untyped-def]
    """A figure with no validated scope of its own gets performance.ERROR_BAND: it must cover what the
    published runs of that figure show together (p90 over all of them), and not be needlessly wide."""
    from mlrig.estimators.performance import ERROR_BAND
    from mlrig.validation import quantile

    for figure, band in ERROR_BAND.items():
        errors = [c.rel_error for c in checked if c.figure == figure and c.predicted is not None]
        assert len(errors) > 50, figure
        p90 = quantile(errors, 0.9)
        assert p90 - 0.02 <= band <= p90 + 0.12, (figure, band, round(p90, 3))


def _rec(figure: str, engine: str, mclass: str, rows: int, med: float, p90: float) -> ScopeRecord:
    return ScopeRecord(figure=figure, engine=engine, memory_class=mclass, rows=rows, median_error=med,
                       p90_error=p90)


def test_figure_validation_and_nearest_scope() -> None:
    table = {r.key: r for r in [
        _rec("decode_tok_s", "llama.cpp", "gddr", 100, 0.07, 0.2),
        _rec("decode_tok_s", "llama.cpp", "unified", 40, 0.1, 0.3),
        _rec("decode_tok_s", "vllm", "hbm", MIN_ROWS - 1, 0.05, 0.1),  # too few rows to count
        _rec("decode_tok_s", "sglang", "hbm", 8, 0.04, 0.1),
    ]}
    v = figure_validation("decode_tok_s", "llama.cpp", "gddr", table)
    assert v.validated and v.rows == 100 and v.p90_error == 0.2 and v.scope == "llama.cpp decode_tok_s, GDDR"
    # same engine on another memory class first, the one with most rows
    v = figure_validation("decode_tok_s", "llama.cpp", "hbm", table)
    assert not v.validated and v.nearest == "llama.cpp decode_tok_s, GDDR"
    # a scope below MIN_ROWS is not validated; the nearest is another engine on the same class
    v = figure_validation("decode_tok_s", "vllm", "hbm", table)
    assert not v.validated and v.rows == MIN_ROWS - 1 and v.nearest == "sglang decode_tok_s, HBM"
    v = figure_validation("ttft_ms", "vllm", "hbm", table)
    assert not v.validated and v.nearest is None


def test_verdict_is_honest() -> None:
    t = target("decode_tok_s", "llama.cpp")
    assert t == (0.10, 0.25)
    assert verdict(_rec("decode_tok_s", "llama.cpp", "gddr", 50, 0.05, 0.2)) == "pass"
    assert verdict(_rec("decode_tok_s", "llama.cpp", "gddr", 50, 0.05, 0.3)) == "over p90"  # median alone passes
    assert verdict(_rec("decode_tok_s", "llama.cpp", "gddr", 50, 0.2, 0.3)) == "over both"
    assert verdict(_rec("decode_tok_s", "llama.cpp", "gddr", 2, 0.0, 0.0)) == "few rows"
    # training and inference peak memory have their own targets
    assert target("per_gpu_gib", "training-lora") == (0.12, 0.30)
    assert target("per_gpu_gib", "vllm") == (0.10, 0.30)


def test_plan_json_carries_a_validation_object_per_figure() -> None:
    from mlrig.planner import evaluate

    r = evaluate({"model": "llama-3.1-8b", "workload": {"precision": "q4_k_m", "engine": "llama.cpp"},
                  "hardware": {"gpu": "rtx-4090"}})
    assert r.performance is not None and r.performance.decode_tok_s
    for figure in ("decode_tok_s", "prefill_tok_s", "per_gpu_gib", "weights_gib"):
        v = r.validation[figure]
        assert "GDDR" in v.scope and v.scope.startswith("llama.cpp")
        assert v.validated == (v.rows >= MIN_ROWS)
        assert v.validated or v.nearest is None or "," in v.nearest
    # the ± band of a validated figure is its scope's p90
    d = r.validation["decode_tok_s"]
    if d.validated:
        assert r.performance.error_band["decode_tok_s"] == pytest.approx(d.p90_error, abs=1e-3)
    dumped = json.loads(r.model_dump_json())
    assert set(dumped["validation"]["decode_tok_s"]) >= {"validated", "scope", "rows"}


def test_validate_cli_fits_80_columns_and_json(checked) -> None:  # type: ignore[no-untyped-def]
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb", "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "mlrig.cli", "validate"], capture_output=True, text=True,
                       timeout=600, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    assert "published runs predicted" in r.stdout
    r = subprocess.run([sys.executable, "-m", "mlrig.cli", "validate", "--json", "--suite", "memory"],
                       capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    out = json.loads(r.stdout)
    memory_figures = {"per_gpu_gib", "weights_gib", "kv_cache_gib", "kv_cache_capacity_tokens",
                      "activations_gib", "overhead_gib", "host_ram_gib"}
    assert {s["figure"] for s in out["scopes"]} <= memory_figures
    assert out["rows_predicted"] == sum(1 for c in checked if c.predicted is not None
                                        and c.figure in memory_figures)


def test_packaged_table_answers_are_memoised_faithfully(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no table given, answers are worked out once per scope: they equal the uncached answer
    from the same table for every scope (and for scopes the table lacks), every plan shares the one
    frozen object, and a new packaged table (after `mlrig validate --write`) is not answered from the old."""
    from mlrig.validation import scopes as sc

    shipped = scope_table()
    assert shipped
    figures = {r.figure for r in shipped.values()} | {"kv_cache_capacity_tokens", "no_such_figure"}
    engines = {r.engine for r in shipped.values()} | {"no-such-engine", "training-qlora"}
    classes = {r.memory_class for r in shipped.values()} | {"host", "nowhere"}
    for figure in figures:
        for engine in engines:
            for mclass in classes:
                expected = figure_validation(figure, engine, mclass, dict(shipped))  # uncached path
                for _ in range(2):
                    got = figure_validation(figure, engine, mclass)
                    assert got == expected, (figure, engine, mclass)
    shared = figure_validation("decode_tok_s", "vllm", "hbm")
    assert shared is figure_validation("decode_tok_s", "vllm", "hbm")
    with pytest.raises(ValidationError):  # frozen: no plan can change what the others see
        shared.rows = 0
    replaced = {r.key: r for r in [_rec("decode_tok_s", "vllm", "hbm", 50, 0.01, 0.02)]}
    monkeypatch.setattr(sc, "scope_table", lambda: replaced)
    v = figure_validation("decode_tok_s", "vllm", "hbm")
    assert v.validated and v.rows == 50 and v.p90_error == 0.02
    assert not figure_validation("decode_tok_s", "llama.cpp", "gddr").validated


def test_a_malformed_calibration_row_is_named_with_its_field(tmp_path: Path) -> None:
    """A row whose measured value is 0 (no relative error exists) or lacks a field is refused on load, naming the
    file, the line and the field, not pydantic's "1 validation error for CalibrationRow"."""
    from mlrig.errors import MlrigError

    good = {"id": "x1", "plan": {"model": {"name": "llama-3.1-8b"}}, "metric": "decode_tok_s", "value": 10.0,
            "source_url": "https://example.org"}
    (tmp_path / "a.jsonl").write_text(json.dumps(good) + "\n" + json.dumps({**good, "value": 0}) + "\n")
    with pytest.raises(MlrigError, match=r"a\.jsonl line 2 is malformed: value: .*measured value of 0"):
        load_rows(tmp_path)
    (tmp_path / "a.jsonl").write_text(json.dumps({k: v for k, v in good.items() if k != "source_url"}) + "\n")
    with pytest.raises(MlrigError, match=r"line 1 is malformed: source_url: Field required"):
        load_rows(tmp_path)
