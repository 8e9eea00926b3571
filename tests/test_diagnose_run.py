"""`mlrig diagnose` on real workloads it runs as subprocesses (a few seconds each, no GPU needed)."""

from __future__ import annotations

import csv
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mlrig.diagnose import diagnose
from mlrig.diagnose.classify import CPU_PEGGED_PERCENT, OTHER_CPU_BUSY_PERCENT, RUN_DELAY_CONTENDED
from mlrig.errors import MlrigError
from mlrig.probe.devices import NullBackend

PY = sys.executable


def kinds_of(report: object) -> set[str]:
    return {f.kind for f in report.findings}  # type: ignore[attr-defined]


def test_busy_python_loop_is_cpu_bound(tmp_path: Path) -> None:
    """A busy loop is CPU bound; on a loaded machine it may instead (or also) wait for a core, and then
    'cpu-contention' is the right answer. Which one must follow from what was measured:
    a job that got a whole core is cpu-bound whatever the load; one that did not must have waited
    for a CPU (run-queue wait) while others used it. It is never idle, I/O bound or unclear."""
    code = "import time\nt = time.time()\nwhile time.time() - t < 3: pass\n"
    rep = diagnose([PY, "-c", code], interval_s=0.5, out_dir=tmp_path, backend=NullBackend())
    assert rep.exit_status == 0
    s = rep.summary
    kinds = kinds_of(rep)
    assert kinds & {"cpu-bound", "cpu-contention"}, kinds
    assert not kinds & {"idle", "io-bound", "unclear", "gpu-idle"}, kinds
    if s.tree_cpu_percent_mean >= CPU_PEGGED_PERCENT:
        assert "cpu-bound" in kinds, (s.tree_cpu_percent_mean, kinds)  # it got a whole core
    if "cpu-bound" in kinds:
        cpu = next(f for f in rep.findings if f.kind == "cpu-bound")
        assert "single-threaded" in cpu.summary or s.logical_cpus == 1
    delay = s.run_delay_s_per_s_mean
    if delay is not None:  # Linux schedstat
        # always running or waiting to run: the CPU it got plus its run-queue wait is about a whole core
        assert s.tree_cpu_percent_mean + 100 * delay > 80, (s.tree_cpu_percent_mean, delay)
        if "cpu-bound" not in kinds:  # squeezed below a core: because it waited for one
            assert delay >= RUN_DELAY_CONTENDED and s.other_cpu_percent_mean >= OTHER_CPU_BUSY_PERCENT
    rows = list(csv.DictReader((tmp_path / "timeline.csv").open()))
    assert len(rows) >= 5 and float(rows[-1]["t_s"]) > 2
    page = (tmp_path / "report.html").read_text()
    assert "<svg" in page and any(k in page for k in kinds & {"cpu-bound", "cpu-contention"})


IO_READER = textwrap.dedent("""
    import mmap, os, sys, time
    path, n = sys.argv[1], 64 << 20
    with open(path, "wb") as f:
        f.write(os.urandom(1 << 20) * 64)
        f.flush(); os.fsync(f.fileno())
    buf = mmap.mmap(-1, 1 << 20)
    flags = os.O_RDONLY | getattr(os, "O_DIRECT", 0)
    fd = os.open(path, flags)
    t = time.time()
    while time.time() - t < 3:
        off = 0
        while off < n:
            off += os.preadv(fd, [buf], off)
            if not hasattr(os, "O_DIRECT"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd); os.unlink(path)
""")


def test_direct_io_reader_is_io_bound(tmp_path: Path) -> None:
    """O_DIRECT reads bypass the page cache, so the job waits on storage with little CPU.

    Classified by iowait when the kernel shows it, else by the job's storage throughput at low CPU
    (the rule `io-bound` documents); in this sandbox both are visible (~40% iowait, ~2 GB/s).
    """
    rep = diagnose([PY, "-c", IO_READER, str(tmp_path / "big.bin")], interval_s=0.5, backend=NullBackend())
    assert rep.exit_status == 0
    assert "io-bound" in kinds_of(rep), rep.findings
    assert "cpu-bound" not in kinds_of(rep)
    assert not (tmp_path / "big.bin").exists()


def test_sleep_is_idle() -> None:
    rep = diagnose(["sleep", "2.5"], interval_s=0.5, backend=NullBackend())
    assert kinds_of(rep) == {"idle"}
    assert rep.summary.n_samples >= 4


def test_exit_status_passes_through_the_cli() -> None:
    r = subprocess.run([PY, "-m", "mlrig.cli", "diagnose", "--interval", "0.2", "--",
                        PY, "-c", "import sys; sys.exit(3)"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stderr


def test_duration_stops_sampling_and_the_command() -> None:
    rep = diagnose(["sleep", "30"], interval_s=0.25, duration_s=1.0, backend=NullBackend())
    assert rep.summary.duration_s < 3
    assert rep.exit_status == 143  # SIGTERM, shell convention
    assert any("SIGTERM" in n for n in rep.notes)


@pytest.mark.parametrize("kwargs, match", [
    ({"command": [], "pid": None}, "either a command"),
    ({"command": ["sleep", "1"], "pid": 1}, "either a command"),
    ({"command": None, "pid": 2**22 + 12345}, "no process with pid"),
    ({"command": ["definitely-not-a-command-xyz"]}, "cannot run"),
    ({"command": ["true"], "interval_s": -1}, "--interval"),
])
def test_bad_input_is_one_line_error(kwargs: dict, match: str) -> None:
    with pytest.raises(MlrigError, match=match):
        diagnose(backend=NullBackend(), **kwargs)


def test_attach_to_pid() -> None:
    p = subprocess.Popen(["sleep", "1.5"])
    try:
        rep = diagnose(pid=p.pid, interval_s=0.3, backend=NullBackend())
    finally:
        p.wait()
    assert rep.pid == p.pid and rep.exit_status is None
    assert "idle" in kinds_of(rep)


def test_ctrl_c_still_writes_the_report_and_passes_the_status(tmp_path: Path) -> None:
    import os
    import signal
    import time

    out = tmp_path / "rep"
    started = tmp_path / "job-started"
    job = f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(30)"
    # a test run started in the background (`pytest &`, `nohup`) inherits SIGINT ignored, and mlrig keeps ignoring
    # it then (interrupts.install): give mlrig the disposition an interactive terminal gives it
    p = subprocess.Popen([PY, "-m", "mlrig.cli", "diagnose", "--interval", "0.3", "--out", str(out), "--",
                          PY, "-c", job], start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Ctrl-C once the job runs (it touches a file first) and mlrig has sampled it a few times: on a loaded
    # machine mlrig's and the job's start-up can take seconds, so wait for the job, not for a fixed time
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert started.exists(), "the wrapped job never started"
    time.sleep(1.0)
    os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130  # the wrapped python died of SIGINT: 128 + 2
    assert "interrupted by Ctrl-C" in err
    assert (out / "timeline.csv").exists() and (out / "report.html").exists()
