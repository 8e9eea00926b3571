"""The fuzz harness itself: every seed is a valid input its reader accepts (so the fuzzer starts from
real files, not from rejections), and `fuzz/run.py` runs and reports with the plain mutation engine
(the fallback where atheris is not installed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"

CHECK_SEEDS = """
import sys
sys.path.insert(0, sys.argv[1])
import targets
targets.setup()
bad = []
for name, fn in targets.TARGETS.items():
    seeds = sorted((targets.SEEDS / name).iterdir())
    assert seeds, name
    for seed in seeds:
        try:
            fn(seed.read_bytes())
        except Exception as exc:
            bad.append(f"{name}/{seed.name}: {exc}")
targets.cleanup()
print("\\n".join(bad))
sys.exit(1 if bad else 0)
"""


def test_every_seed_is_accepted() -> None:
    r = subprocess.run([sys.executable, "-c", CHECK_SEEDS, str(FUZZ)], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stdout + r.stderr


def test_run_reports_figures(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    r = subprocess.run([sys.executable, str(FUZZ / "run.py"), "--seconds", "2", "--engine", "random",
                        "--target", "gguf", "--target", "plan_toml", "--workdir", str(tmp_path / "w"),
                        "--json", str(out)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    figures = json.loads(out.read_text())
    assert [t["target"] for t in figures["targets"]] == ["gguf", "plan_toml"]
    for t in figures["targets"]:
        assert t["engine"] == "random" and t["execs"] > 0 and t["crashes"] == 0 and t["peak_rss_mib"] > 0
    assert "no crashes, no input over 2 s" in r.stdout
