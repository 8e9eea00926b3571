"""Running the installed CLI as a user does (`python -m mlrig.cli`), for the user-story tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed entry point (`mlrig.cli.main`), where bad input becomes one line and exit status 2."""
    env = {**os.environ, "COLUMNS": "250", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True,
                          timeout=240, env=env, cwd=ROOT)


def one_line_error(res: subprocess.CompletedProcess[str]) -> str:
    """The one stderr line of a refused command (exit 2, nothing on stdout, no traceback)."""
    assert res.returncode == 2 and res.stdout == "" and "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlrig: error: "), res.stderr
    return lines[0]
