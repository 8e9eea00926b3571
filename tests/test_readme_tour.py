"""The README's quick start and tour run as written: every `mlrig ...` line exits 0 and prints something.

The commands run in order in one temporary working directory (with `examples/` linked in) and one
MLRIG_HOME, because `plan --machine local` reads what `probe` measured. `monitor` serves forever, so it
is started, its /metrics page read once, and stopped; if the README's port is taken on this machine, a
free one is used instead.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def tour_commands() -> list[list[str]]:
    """The `mlrig` lines of the README's first bash block under '## A tour', split like a shell would."""
    tour = README[README.index("## A tour"):]
    block = re.search(r"```bash\n(.*?)```", tour, re.S)
    assert block, "README: no bash block under '## A tour'"
    commands = []
    for line in block.group(1).splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            assert argv[0] == "mlrig", line
            commands.append(argv)
    return commands


def _mlrig(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "mlrig.cli", *argv[1:]]


def _free_port(preferred: int) -> int:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])


def _run_monitor(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    i = argv.index("--prometheus")
    port = _free_port(int(argv[i + 1]))
    argv = [*argv[: i + 1], str(port), *argv[i + 2:]]
    proc = subprocess.Popen(_mlrig(argv), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()[1].decode()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    body = r.read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline, "monitor did not serve /metrics within 60 s"
                time.sleep(0.5)
        assert "mlrig" in body or "DCGM" in body or "host_" in body, body[:300]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_quick_start_command_is_the_first_plan() -> None:
    quick = README[README.index("## Quick start"):README.index("## A tour")]
    assert "pip install . && mlrig plan meta-llama/Llama-3.1-8B --gpu \"RTX 4090\"" in quick
    assert 'pip install -e ".[dev]" && python -m pytest -q' in quick


def test_tour_runs_as_written(tmp_path: Path) -> None:
    pytest.importorskip("prometheus_client")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "MLRIG_HOME": str(tmp_path / "home"), "COLUMNS": "100", "TERM": "dumb",
           "PYTHONPATH": str(ROOT)}
    commands = tour_commands()
    assert len(commands) >= 25
    for argv in commands:
        if argv[1] == "monitor":
            _run_monitor(argv, tmp_path, env)
            continue
        r = subprocess.run(_mlrig(argv), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{shlex.join(argv)}\n{r.stderr[-2000:]}"
        assert r.stdout.strip() or "-o" in argv, shlex.join(argv)  # eval -o writes to its file
    assert (tmp_path / "results.jsonl").read_text().count("\n") == 5


def _levels_above_root(path: Path, text: str) -> list[str]:
    """Each `Path(__file__)...parents[n]` / `.parent.parent...` in `text` that climbs above the
    repository root from `path`: a file n folders deep may climb at most n levels."""
    import re

    depth = len(path.relative_to(ROOT).parts)
    found = []
    for m in re.finditer(r"Path\(__file__\)(?:\.resolve\(\))?(\.parents\[(\d+)\]|(?:\.parent(?!s))+)", text):
        levels = int(m.group(2)) + 1 if m.group(2) else m.group(1).count(".parent")
        if levels > depth:
            found.append(m.group(0))
    return found


def test_no_code_resolves_a_path_outside_the_project() -> None:
    """A clone or an installed wheel has only the project: no module, test, script, benchmark or fuzz
    target may build a path above the repository root from its own location (CI's clean clone and
    wheel steps prove the rest)."""
    offenders = []
    for folder in ("mlrig", "tests", "scripts", "benchmarks", "fuzz", "examples"):
        for path in (ROOT / folder).rglob("*.py"):
            found = _levels_above_root(path, path.read_text(encoding="utf-8", errors="ignore"))
            offenders += [f"{path.relative_to(ROOT)}: {f}" for f in found]
    assert not offenders, offenders
    # the check itself can fail: a test file climbing three levels leaves the project (the probes are
    # assembled so that this file does not match itself)
    here = "Path(" + "__file__)"
    assert _levels_above_root(ROOT / "tests" / "x.py", here + ".resolve().parents[2]")
    assert _levels_above_root(ROOT / "tests" / "x.py", here + ".parent" * 3)
    assert not _levels_above_root(ROOT / "tests" / "x.py", here + ".resolve().parents[1]")
