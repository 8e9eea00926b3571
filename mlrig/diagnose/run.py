"""Run or attach to a job, sample it at a fixed interval, classify, and write the report.

A GPU that stops answering mid-run is noted and sampling goes on with the host side only.
A command runs in its own process group, so stopping it stops its workers too. Ctrl-C, SIGTERM and
SIGHUP (see `mlrig.interrupts`) stop sampling; the same signal is passed to the job's group, which
gets a grace period, then SIGTERM, then SIGKILL; the report is still written and the command's exit
status returned. When --duration ends sampling first, the group gets SIGTERM, then SIGKILL. An
attached process (--pid) is never signalled: it is not ours.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from mlrig.diagnose.classify import classify, summarise
from mlrig.diagnose.models import DiagnoseReport, Sample
from mlrig.errors import MlrigError, require_positive
from mlrig.interrupts import STOP, Terminated, describe, signum
from mlrig.probe.devices import GpuBackend, GpuError, GpuSample
from mlrig.probe.host import HostSampler

INT_GRACE_S = 5.0
"""After Ctrl-C the job's group gets SIGINT and this long to stop (time to save a checkpoint)."""
TERM_GRACE_S = 10.0
"""Then SIGTERM and this long before SIGKILL."""


def sample_loop(backend: GpuBackend, host: HostSampler, *, interval_s: float,
                duration_s: float | None = None, max_samples: int | None = None,
                wait: Callable[[float], bool] | None = None,
                notes: list[str] | None = None,
                stopped_by: list[int] | None = None) -> tuple[list[Sample], bool]:
    """Sample until `wait(timeout)` says the job ended, the duration passes or `max_samples` is reached.

    `wait(t)` blocks up to t seconds and returns True once the job has exited (None: never exits).
    Returns the samples and whether the loop was interrupted (Ctrl-C, SIGTERM or SIGHUP; the signal
    number is appended to `stopped_by`).
    """
    notes = notes if notes is not None else []
    samples: list[Sample] = []
    gpu_ok = True
    t0 = time.monotonic()
    interrupted = False

    def take() -> None:
        nonlocal gpu_ok
        gpus: list[GpuSample] = []
        if gpu_ok:
            try:
                gpus = backend.sample()
            except GpuError as exc:
                gpu_ok = False
                notes.append(f"GPU sampling stopped after {len(samples)} samples ({exc}); "
                             "continuing with CPU-side sampling")
        samples.append(Sample(t_s=time.monotonic() - t0, gpus=gpus, host=host.sample()))

    try:
        while True:
            take()
            if max_samples is not None and len(samples) >= max_samples:
                break
            elapsed = time.monotonic() - t0
            if duration_s is not None and elapsed >= duration_s:
                break
            next_t = len(samples) * interval_s
            timeout = max(0.0, next_t - elapsed)
            if duration_s is not None:
                timeout = min(timeout, max(0.0, duration_s - elapsed))
            if wait is None:
                time.sleep(timeout)
            elif wait(timeout):
                if len(samples) < 2:  # a job shorter than one interval still gets a rate reading
                    take()
                break
    except STOP as exc:
        interrupted = True
        if stopped_by is not None:
            stopped_by.append(signum(exc))
        notes.append(f"interrupted by {describe(exc)} after {len(samples)} samples")
    return samples, interrupted


def _exit_status(rc: int) -> int:
    """Popen's returncode -> shell convention (killed by signal N -> 128+N)."""
    return 128 - rc if rc < 0 else rc


def diagnose(command: list[str] | None = None, pid: int | None = None, *, interval_s: float = 1.0,
             duration_s: float | None = None, out_dir: Path | None = None,
             backend: GpuBackend | None = None, host: HostSampler | None = None) -> DiagnoseReport:
    """Run `command` (or attach to `pid`), sample, classify, write CSV + HTML into `out_dir`."""
    require_positive("--interval", interval_s, maximum=3600)
    require_positive("--duration", duration_s, maximum=30 * 86400)
    if pid is not None and not 0 < pid < 2**31:
        raise MlrigError(f"--pid must be a positive process id, got {pid}; see `ps` or `pgrep` for the job's pid")
    if bool(command) == (pid is not None):
        raise MlrigError("give either a command after `--` (mlrig diagnose -- python train.py) or --pid N")
    if out_dir is not None:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MlrigError(f"cannot create --out directory {out_dir}: {exc.strerror}") from exc
    from mlrig.probe.devices import default_backend
    from mlrig.probe.host import PsutilHostSampler

    backend = backend or default_backend()
    devices = backend.devices()
    notes: list[str] = []
    reason = getattr(backend, "reason", "")
    if not devices:
        notes.append(f"no GPU found{': ' + reason if reason else ''}; CPU-side diagnosis only")
    proc: subprocess.Popen[bytes] | None = None
    if command:
        try:  # its own process group: --duration and signals stop the job and every worker it started
            proc = subprocess.Popen(command, process_group=0)
        except OSError as exc:  # not found, not executable, no shebang (ENOEXEC), ...
            hint = ("make it executable (chmod +x) or run it through its interpreter, e.g. -- python FILE"
                    if isinstance(exc, PermissionError) or exc.errno == 8 else "check the command after --")
            raise MlrigError(f"cannot run {command[0]!r}: {exc.strerror or exc}; {hint}") from None
        pid = proc.pid
    assert pid is not None
    try:
        host = host or PsutilHostSampler(pid)
    except (MlrigError, KeyboardInterrupt, Terminated):
        if proc is not None:
            _stop_group(proc, signal.SIGKILL)
            proc.wait()
        raise
    wait = _waiter(proc, pid)
    stopped_by: list[int] = []
    try:
        samples, interrupted = sample_loop(backend, host, interval_s=interval_s, duration_s=duration_s,
                                           wait=wait, notes=notes, stopped_by=stopped_by)
    except STOP:  # a signal outside the loop's own handler: never leave the job running
        if proc is not None:
            _stop_group(proc, signal.SIGKILL)
        raise
    exit_status: int | None = None
    with _shielded(proc):  # the job is stopped and the report written even if another signal comes
        if proc is not None:
            exit_status = _finish(proc, notes, stopped_by[0] if stopped_by else None)
        backend.close()
        report = DiagnoseReport(command=list(command or []), pid=None if command else pid,
                                exit_status=exit_status, interrupted=interrupted, interval_s=interval_s,
                                devices=devices, notes=notes, summary=summarise(samples),
                                findings=classify(samples, exit_status=exit_status,
                                                  job_ended=proc is not None and not interrupted))
        if out_dir is not None:
            _write_files(report, samples, out_dir)
    return report


def _write_files(report: DiagnoseReport, samples: list[Sample], out_dir: Path) -> None:
    from mlrig.diagnose.report import write_csv, write_html

    csv_path, html_path = out_dir / "timeline.csv", out_dir / "report.html"
    try:
        write_csv(samples, csv_path)
        write_html(report, samples, html_path)
    except OSError as exc:
        report.notes.append(f"could not write the report files in {out_dir}: {exc.strerror or exc}")
        return
    report.files = [str(csv_path), str(html_path)]


def _stop_group(proc: subprocess.Popen[bytes], sig: int) -> bool:
    """Send `sig` to the job's process group (the job and everything it started); False if gone."""
    try:
        os.killpg(proc.pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _group_alive(proc: subprocess.Popen[bytes]) -> bool:
    try:
        os.killpg(proc.pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


@contextlib.contextmanager
def _shielded(proc: subprocess.Popen[bytes] | None) -> Iterator[None]:
    """While the job is stopped and the report written, a further Ctrl-C/SIGTERM/SIGHUP does not
    abort mlrig: it hurries the job (SIGKILL to its group) instead."""
    names = ("SIGINT", "SIGTERM", "SIGHUP")
    old: dict[int, object] = {}

    def hurry(_signum: int, _frame: FrameType | None) -> None:
        if proc is not None:
            _stop_group(proc, signal.SIGKILL)

    for name in names:
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            old[sig] = signal.signal(sig, hurry)
        except ValueError:  # not the main thread: nothing to shield
            break
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


def _waiter(proc: subprocess.Popen[bytes] | None, pid: int) -> Callable[[float], bool]:
    if proc is not None:
        def wait_child(t: float) -> bool:
            try:
                proc.wait(timeout=t)
                return True
            except subprocess.TimeoutExpired:
                return False
        return wait_child

    import psutil

    def wait_pid(t: float) -> bool:
        try:
            psutil.Process(pid).wait(timeout=t)
            return True
        except psutil.TimeoutExpired:
            return False
        except psutil.NoSuchProcess:
            return True
    return wait_pid


def _finish(proc: subprocess.Popen[bytes], notes: list[str], stopped_by: int | None) -> int:
    """Wait for the wrapped command; if sampling ended first (--duration, or the signal `stopped_by`),
    stop its whole process group: after Ctrl-C, SIGINT with a grace of `INT_GRACE_S`; then SIGTERM
    with `TERM_GRACE_S`; then SIGKILL. Workers left in the group after the job exits are stopped too."""
    try:
        return _exit_status(proc.wait(timeout=0.01))
    except subprocess.TimeoutExpired:
        pass
    steps = [(signal.SIGTERM, TERM_GRACE_S)]
    if stopped_by == signal.SIGINT:
        steps.insert(0, (signal.SIGINT, INT_GRACE_S))
    status: int | None = None
    for sig, grace in steps:
        notes.append(f"sampling ended before the command did; sent its process group {sig.name}")
        _stop_group(proc, sig)
        try:
            status = _exit_status(proc.wait(timeout=grace))
            break
        except subprocess.TimeoutExpired:
            continue
    if status is None:
        notes.append(f"the command outlived SIGTERM by {TERM_GRACE_S:g} s; sent its process group SIGKILL")
        _stop_group(proc, signal.SIGKILL)
        status = _exit_status(proc.wait())
    _reap_group(proc, notes)
    return status


def _reap_group(proc: subprocess.Popen[bytes], notes: list[str]) -> None:
    """Stop workers that outlived the job in its process group (SIGTERM, 2 s, then SIGKILL)."""
    if not _group_alive(proc):
        return
    _stop_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + 2.0
    while _group_alive(proc) and time.monotonic() < deadline:
        time.sleep(0.05)
    _stop_group(proc, signal.SIGKILL)
    notes.append("stopped worker processes the command left running")
