"""scripts/holdout_gap.py: grouping a scope's fit and held-out rows by setup attributes (hand-made rows)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from mlrig.validation.runner import CalibrationRow, Checked

ROOT = Path(__file__).resolve().parents[1]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("holdout_gap", ROOT / "scripts/holdout_gap.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


def _row(rid: str, load: str, prompt: int, split: str) -> CalibrationRow:
    plan = {"model": {"name": "m"}, "hardware": {"gpu": "H100 SXM", "count": 2},
            "workload": {"engine": "sglang", "load": load, "prompt_tokens": prompt}}
    return CalibrationRow(id=rid, plan=plan, metric="ttft_ms", value=100.0, source_url="u", split=split)


def test_attributes_read_from_the_plan() -> None:
    hg = _module()
    r = _row("SRC-0001", "offline", 300, "holdout")
    assert [hg.attribute(r, n) for n in ("load", "gpu", "gpus", "prompt", "engine_version", "source")] == [
        "offline", "h100-sxm-80gb", "2", "<=1k", "-", "SRC"]
    assert hg.canonical_gpu("A100 SXM4 80GB") == hg.canonical_gpu("A100 SXM 80GB") == "a100-sxm-80gb"
    assert hg.canonical_gpu("no such card") == "no such card"
    assert [hg.prompt_class(t) for t in (256, 257, 4096, 4097)] == ["<=256", "<=1k", "<=4k", ">4k"]


def test_a_class_only_held_out_rows_have_is_marked() -> None:
    hg = _module()
    # fit: two concurrency rows +10 % / -20 %; held out: one concurrency row -40 %, two offline rows -30 / -50 %
    groups = hg.group_gap([("concurrency", "fit", 0.10), ("concurrency", "fit", -0.20),
                           ("concurrency", "holdout", -0.40), ("offline", "holdout", -0.30),
                           ("offline", "holdout", -0.50)])
    fit, held = groups["concurrency"]
    assert fit is not None and fit.n == 2 and fit.median_abs == pytest.approx(0.15)
    assert fit.median_signed == pytest.approx(-0.05)
    assert held is not None and held.n == 1
    assert groups["offline"][0] is None and groups["offline"][1].median_signed == pytest.approx(-0.40)
    assert hg.uncovered(groups) == ["offline"]


def test_report_groups_one_scope_only() -> None:
    hg = _module()
    scope = "ttft_ms / sglang / hbm"
    rows = [_row("A-0001", "rate", 200, "fit"), _row("B-0001", "offline", 200, "holdout"),
            _row("C-0001", "offline", 200, "fit")]
    checked = [Checked(id="A-0001", figure="ttft_ms", scope=scope, split="fit", measured=100.0, predicted=110.0),
               Checked(id="B-0001", figure="ttft_ms", scope=scope, split="holdout", measured=100.0, predicted=60.0),
               Checked(id="C-0001", figure="ttft_ms", scope="ttft_ms / vllm / hbm", split="fit", measured=100.0,
                       predicted=100.0)]
    lines: list[str] = []
    hg.report(scope, list(zip(rows, checked, strict=True)), ["load"], out=lines.append)
    text = "\n".join(lines)
    assert "fit 1 rows median 10.0%, holdout 1 rows median 40.0%" in text
    offline = next(line for line in lines if "offline" in line)
    assert offline.lstrip().startswith("!") and "-40.0%" in offline
