"""Signals and faults: `probe` and `diagnose` run as real subprocesses and are sent SIGINT, SIGTERM or
SIGHUP; nothing may be left behind (temporary files, the job, its workers) and diagnose's report must
exist. Every wait is on a condition with a generous deadline, never a fixed sleep, so a loaded 2-core
machine only makes the tests slower."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from mlrig.errors import MlrigError

DEADLINE_S = 120.0


def wait_for(cond: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _default_signals() -> None:
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


@contextmanager
def started(args: list[str], tmp: Path) -> Iterator[subprocess.Popen[str]]:
    """`mlrig ARGS` as a subprocess, killed and reaped on the way out if a check failed before it ended.
    The child starts with the default disposition of the signals under test: a test run launched under
    `nohup` (or any parent that ignores SIGHUP) would otherwise pass SIG_IGN on, and mlrig rightly keeps
    an ignored signal ignored."""
    env = {**os.environ, "MLRIG_HOME": str(tmp / "home"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "mlrig.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
                            preexec_fn=_default_signals)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_probe_signal_removes_its_temp_file(tmp_path: Path, sig: signal.Signals) -> None:
    """The signal must reach the probe while its disk test's file exists (about 1 s of random reads with
    --quick). On a loaded machine this test's polling can be descheduled past that window and the probe
    end first: that run tested nothing, so it is started again (a few times), never counted as a pass."""
    disk = tmp_path / "disk"
    disk.mkdir()
    for _attempt in range(5):
        with started(["probe", "--quick", "--dir", str(disk)], tmp_path) as proc:
            wait_for(lambda: any(disk.glob(".mlrig-probe-*.tmp")) or proc.poll() is not None, "the disk test's file")
            if proc.poll() is not None:  # finished before the file was seen: it must have cleaned up; again
                assert proc.wait() == 0 and list(disk.iterdir()) == [], proc.communicate()
                continue
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=DEADLINE_S)
        break
    else:
        pytest.fail("the probe finished its disk test before this test saw its file, 5 times")
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and f"interrupted ({'Ctrl-C' if sig == signal.SIGINT else sig.name})" in err
    assert list(disk.iterdir()) == []


def test_probe_disk_full_is_one_line_and_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC mid-write (simulated: CI cannot mount a small filesystem) leaves no file behind."""
    from mlrig.probe import measure

    def full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(measure, "_write_all", full)
    with pytest.raises(MlrigError, match="No space left on device") as exc:
        measure.disk_bench(tmp_path, 2**20, random_reads_s=0.1)
    assert "\n" not in str(exc.value) and "--quick" in str(exc.value)
    assert list(tmp_path.iterdir()) == []


def test_short_writes_are_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlrig.probe import measure

    real = os.write
    monkeypatch.setattr(measure.os, "write", lambda fd, data: real(fd, bytes(data[:1000])))
    path = tmp_path / "f"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        measure._write_all(fd, b"x" * 5000)
    finally:
        os.close(fd)
    assert path.stat().st_size == 5000


JOB = textwrap.dedent("""
    import signal, subprocess, sys, time
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # die of Ctrl-C quietly, as of SIGTERM
    # the worker says it is ready once its own Ctrl-C handling is set: a signal that reached it while
    # Python was still starting would print a start-up traceback (a race on a loaded machine)
    quiet = ("import signal, sys, time; signal.signal(signal.SIGINT, signal.SIG_DFL); print('ready', flush=True); "
             "time.sleep(600)")
    worker = subprocess.Popen([sys.executable, "-c", quiet], stdout=subprocess.PIPE)
    worker.stdout.readline()
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(f"{worker.pid}\\n")
    import os; os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(600)
""")


def _job(tmp: Path) -> tuple[Path, Path]:
    script = tmp / "job.py"
    script.write_text(JOB)
    return script, tmp / "worker.pid"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_diagnose_signal_stops_the_job_group_and_writes_the_report(tmp_path: Path, sig: signal.Signals) -> None:
    script, pidfile = _job(tmp_path)
    out = tmp_path / "out"
    with started(["diagnose", "--interval", "0.2", "--out", str(out), "--", sys.executable, str(script),
                  str(pidfile)], tmp_path) as proc:
        wait_for(lambda: pidfile.exists() or proc.poll() is not None, "the job to start its worker")
        assert proc.poll() is None, proc.communicate()
        worker = int(pidfile.read_text())
        job = next(c.pid for c in psutil.Process(proc.pid).children() if c.pid != worker)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=DEADLINE_S)
    assert "Traceback" not in err, err
    assert (out / "report.html").exists() and (out / "timeline.csv").exists()
    name = "Ctrl-C" if sig == signal.SIGINT else sig.name
    assert f"interrupted by {name}" in (out / "report.html").read_text()
    wait_for(lambda: gone(job) and gone(worker), "the job and its worker to stop", timeout=30)


def test_diagnose_duration_stops_grandchildren(tmp_path: Path) -> None:
    script, pidfile = _job(tmp_path)
    with started(["diagnose", "--interval", "0.2", "--duration", "2", "--json", "--", sys.executable,
                  str(script), str(pidfile)], tmp_path) as proc:
        out, err = proc.communicate(timeout=DEADLINE_S)
    assert "Traceback" not in err, err
    assert proc.returncode == 128 + signal.SIGTERM  # the job's own status: stopped by SIGTERM
    assert '"exit_status": 143' in out
    wait_for(pidfile.exists, "the worker's pid file", timeout=5)
    wait_for(lambda: gone(int(pidfile.read_text())), "the worker to stop", timeout=30)


def test_diagnose_early_exit_is_named(tmp_path: Path) -> None:
    from mlrig.diagnose import diagnose
    from mlrig.probe.devices import NullBackend

    rep = diagnose([sys.executable, "-c", "import sys; sys.exit(3)"], interval_s=0.2, backend=NullBackend())
    assert rep.exit_status == 3
    assert [f.kind for f in rep.findings] == ["exited-early"]
    assert "exited early (status 3)" in rep.findings[0].summary


def test_monitor_bounds_concurrent_connections() -> None:
    pytest.importorskip("prometheus_client")
    from test_monitor import exporter

    exp = exporter("healthy.json")
    exp.update()
    server, _ = exp.serve(0, "127.0.0.1", max_connections=2)
    port = server.server_port
    idle: list[socket.socket] = []
    try:
        before = len(psutil.Process().threads())
        for _ in range(8):  # idle clients that never send a request
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=30))
        time.sleep(0.5)  # let the server accept them (not an assertion: the bound below holds anyway)
        assert len(psutil.Process().threads()) - before <= 2
        for s in idle:
            s.close()

        def scrape() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
                    return b"DCGM_FI_DEV_GPU_UTIL" in r.read()
            except OSError:
                return False

        wait_for(scrape, "a scrape to succeed once the idle clients left", timeout=60)
    finally:
        for s in idle:
            s.close()
        server.shutdown()
        server.server_close()
