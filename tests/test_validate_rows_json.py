"""`mlrig validate --rows --json`: each row says its relative error (predicted / measured - 1, signed) in
`relative_error` and why there is no prediction in `refusal`; `error` keeps its old meaning (the refusal text) for
readers of the earlier output (issue 10 §4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlrig.cli import app

ROW = {"id": "T-0001", "plan": {"model": {"name": "llama-3.1-8b"}, "workload": {
    "task": "inference", "precision": "bf16", "engine": "vllm", "batch_size": 1, "load": "static"},
    "hardware": {"gpu": "H100 SXM", "count": 1}}, "metric": "decode_tok_s", "value": 100.0, "unit": "tok/s",
    "source_url": "https://example.org", "source_date": "2025-01-01", "software": "vLLM 0.8.0",
    "source_note": "test row", "split": "fit"}
REFUSED = {**ROW, "id": "T-0002", "plan": {**ROW["plan"], "model": {"name": "no-such-org/no-such-model-xyz"}}}


def test_rows_carry_relative_error_and_refusal_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cal"
    folder.mkdir()
    (folder / "t.jsonl").write_text(json.dumps(ROW) + "\n" + json.dumps(REFUSED) + "\n")
    monkeypatch.setenv("MLRIG_CALIBRATION_DIR", str(folder))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = CliRunner().invoke(app, ["validate", "--rows", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["id"]: r for r in json.loads(res.stdout)["rows"]}
    good, bad = rows["T-0001"], rows["T-0002"]
    assert good["predicted"] > 0 and good["refusal"] is None and good["error"] is None
    assert good["relative_error"] == pytest.approx(good["predicted"] / 100.0 - 1.0)
    assert bad["predicted"] is None and bad["relative_error"] is None
    assert bad["refusal"] and bad["error"] == bad["refusal"] and "no-such-model-xyz" in bad["refusal"]
