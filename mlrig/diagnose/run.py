"""Run or attach to a job, sample it at a fixed interval, classify, and write the report.

A GPU that stops answering mid-run is noted and sampling goes on with the host side only.
Ctrl-C stops sampling; the report is still written and the wrapped command's exit status returned.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from mlrig.diagnose.classify import classify, summarise
from mlrig.diagnose.models import DiagnoseReport, Sample
from mlrig.errors import MlrigError, require_positive
from mlrig.probe.devices import GpuBackend, GpuError, GpuSample
from mlrig.probe.host import HostSampler


def sample_loop(backend: GpuBackend, host: HostSampler, *, interval_s: float,
                duration_s: float | None = None, max_samples: int | None = None,
                wait: Callable[[float], bool] | None = None,
                notes: list[str] | None = None) -> tuple[list[Sample], bool]:
    """Sample until `wait(timeout)` says the job ended, the duration passes or `max_samples` is reached.

    `wait(t)` blocks up to t seconds and returns True once the job has exited (None: never exits).
    Returns the samples and whether the loop was interrupted by Ctrl-C.
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
    except KeyboardInterrupt:
        interrupted = True
        notes.append(f"interrupted by Ctrl-C after {len(samples)} samples")
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
        try:
            proc = subprocess.Popen(command)
        except (FileNotFoundError, PermissionError) as exc:
            raise MlrigError(f"cannot run {command[0]!r}: {exc.strerror}; check the command after --") from exc
        pid = proc.pid
    assert pid is not None
    try:
        host = host or PsutilHostSampler(pid)
    except MlrigError:
        if proc is not None:
            proc.kill()
        raise
    wait = _waiter(proc, pid)
    samples, interrupted = sample_loop(backend, host, interval_s=interval_s, duration_s=duration_s,
                                       wait=wait, notes=notes)
    exit_status: int | None = None
    if proc is not None:
        exit_status = _finish(proc, notes, interrupted)
    backend.close()
    report = DiagnoseReport(command=list(command or []), pid=None if command else pid,
                            exit_status=exit_status, interrupted=interrupted, interval_s=interval_s,
                            devices=devices, notes=notes,
                            summary=summarise(samples), findings=classify(samples))
    if out_dir is not None:
        from mlrig.diagnose.report import write_csv, write_html

        csv_path, html_path = out_dir / "timeline.csv", out_dir / "report.html"
        write_csv(samples, csv_path)
        write_html(report, samples, html_path)
        report.files = [str(csv_path), str(html_path)]
    return report


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


def _finish(proc: subprocess.Popen[bytes], notes: list[str], interrupted: bool) -> int:
    """Wait for the wrapped command; if sampling ended first (duration/Ctrl-C), stop it politely."""
    grace = 5.0 if interrupted else 0.0
    try:
        return _exit_status(proc.wait(timeout=grace or 0.01))
    except subprocess.TimeoutExpired:
        pass
    notes.append("sampling ended before the command did; sent it SIGTERM")
    proc.terminate()
    try:
        return _exit_status(proc.wait(timeout=10))
    except subprocess.TimeoutExpired:
        proc.kill()
        return _exit_status(proc.wait())
