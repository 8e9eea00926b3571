"""The `probe`, `diagnose`, `monitor` commands through the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def mlrig(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MLRIG_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True,
                          timeout=60, env=env)


def test_probe_history_empty_then_bad_dir(tmp_path: Path) -> None:
    r = mlrig("probe", "--history", home=tmp_path)
    assert r.returncode == 0 and "no probes saved" in r.stderr
    r = mlrig("probe", "--quick", "--dir", str(tmp_path / "missing"), home=tmp_path)
    assert r.returncode == 2 and "not a directory" in r.stderr and "Traceback" not in r.stderr


def test_diagnose_json_and_missing_command(tmp_path: Path) -> None:
    r = mlrig("diagnose", "--interval", "0.3", "--json", "--", "sleep", "1", home=tmp_path)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["findings"][0]["kind"] == "idle" and data["exit_status"] == 0
    r = mlrig("diagnose", home=tmp_path)
    assert r.returncode == 2 and "either a command" in r.stderr
