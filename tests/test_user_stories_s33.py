"""Second user-facing pass (issue 10), the leftovers tests/test_user_stories_s32.py noticed: each test here failed
before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True,
                          timeout=240, env=env, cwd=ROOT)


# ---- 1. three cards and 40 heads: a serving engine runs pipeline parallelism, not a refused TP 3

def test_a_gpu_count_tp_cannot_split_the_heads_over_defaults_to_pipeline_parallel() -> None:
    from mlrig.planner import evaluate

    r = evaluate({"model": "qwen2.5-32b", "workload": {"precision": "awq"},
                  "hardware": {"gpu": "RTX 3090", "count": 3}})
    assert r.fits and r.performance is not None and (r.performance.decode_tok_s or 0) > 0
    assert any("--tensor-parallel-size 1 --pipeline-parallel-size 3" in n for n in r.notes), r.notes
    # six cards: TP 2 (divides 40 heads / 8 KV heads) x PP 3
    six = evaluate({"model": "qwen2.5-32b", "hardware": {"gpu": "RTX 3090", "count": 6}})
    assert any("--tensor-parallel-size 2 --pipeline-parallel-size 3" in n for n in six.notes), six.notes


def test_tp_given_that_does_not_divide_the_heads_is_still_refused() -> None:
    import pytest

    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate

    with pytest.raises(MlrigError, match="tensor_parallel 3 does not divide"):
        evaluate({"model": "qwen2.5-32b", "hardware": {"gpu": "RTX 3090", "count": 3, "tensor_parallel": 3}})


def test_recommend_evaluates_three_cards_instead_of_refusing_them() -> None:
    res = mlrig("recommend", "--local-only", "--gpu", "RTX 3090", "--model", "qwen2.5-32b", "--precision", "awq",
                "--min-tok-s", "15", "--json")
    assert res.returncode == 0, res.stderr
    three = [o for o in json.loads(res.stdout)["options"] if o["gpus"] == 3]
    assert three and all("does not divide" not in (o["excluded_reason"] or "") for o in three), three
    assert any(o["fits"] for o in three)
