"""`mlrig build check` answers "Two 3090s on a 1000 W PSU, 64 GB RAM: any problems?" in one command, from flags
(USER-STORIES.md, "Will this build work?"), with what it assumed said; the same PSU finding as the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_flags_describe_a_build() -> None:
    res = mlrig("build", "check", "--gpu", "NVIDIA GeForce RTX 3090", "-n", "2", "--psu-w", "1000", "--ram-gib",
                "64", "--json")
    assert res.returncode == 1  # errors found: the 3090s' transients trip a 1000 W ATX 2.x unit
    report = json.loads(res.stdout)
    psu = next(f for f in report["findings"] if f["check"] == "psu")
    assert psu["severity"] == "error" and "transient" in psu["what"]
    assert any("CPU not given" in a for a in report["assumptions"])
    assert any("no board given" in a for a in report["assumptions"])


def test_missing_flags_are_one_line_exit_2() -> None:
    res = mlrig("build", "check", "--gpu", "RTX 3090")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "--psu-w, --ram-gib" in res.stderr


def test_a_file_and_flags_together_are_refused() -> None:
    res = mlrig("build", "check", "examples/build-2x3090.toml", "--gpu", "RTX 3090")
    assert res.returncode == 2 and "not both" in res.stderr
