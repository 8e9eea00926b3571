"""Host-side sampling: per-core CPU, RAM, swap, disk throughput, iowait and a job's process tree.

`PsutilHostSampler` reads the live machine through psutil (imported lazily). Rates (bytes/s, CPU %)
are deltas between consecutive `sample()` calls, so the first call primes the counters and reports
zero rates. `RecordedHostSampler` replays the host part of a `Recording` for tests.

iowait is Linux's "time idle with I/O outstanding" (/proc/stat, proc(5)); it is 0 on macOS and often
near zero inside VMs where the hypervisor absorbs the wait, which is why the classifier also looks at
the job's own storage throughput (/proc/<pid>/io read_bytes/write_bytes, via psutil io_counters).
"""

from __future__ import annotations

import os
import time
from typing import Any, Protocol

from pydantic import BaseModel, Field

from mlrig.errors import MlrigError
from mlrig.probe.devices import Recording


class ProcInfo(BaseModel):
    """One process in the job's tree (the root and its data-loader workers)."""

    pid: int
    name: str
    cpu_percent: float  # % of one core (so a process using 2 cores reads 200)
    rss_bytes: int = 0
    is_root: bool = False


class HostSample(BaseModel):
    t_s: float = 0.0  # seconds since sampling started
    cpu_percent_per_core: list[float] = Field(default_factory=list)
    iowait_percent: float | None = None
    ram_used_bytes: int = 0
    ram_total_bytes: int = 0
    swap_used_bytes: int = 0
    swap_total_bytes: int = 0
    swap_in_bytes_s: float = 0.0
    swap_out_bytes_s: float = 0.0
    disk_read_bytes_s: float = 0.0  # whole machine
    disk_write_bytes_s: float = 0.0
    proc_read_bytes_s: float = 0.0  # the job's tree, storage-level bytes (/proc/<pid>/io)
    proc_write_bytes_s: float = 0.0
    # Seconds per second the job's threads spent runnable but waiting for a CPU (Linux schedstat
    # run_delay summed over the tree's threads; None where the kernel does not report it).
    proc_run_delay_s_per_s: float | None = None
    procs: list[ProcInfo] = Field(default_factory=list)

    @property
    def cpu_percent_mean(self) -> float:
        c = self.cpu_percent_per_core
        return sum(c) / len(c) if c else 0.0

    @property
    def tree_cpu_percent(self) -> float:
        return sum(p.cpu_percent for p in self.procs)


class HostSampler(Protocol):
    def sample(self) -> HostSample: ...


class PsutilHostSampler:
    """Live host readings; `pid` (optional) is the root of the job's process tree."""

    def __init__(self, pid: int | None = None) -> None:
        import psutil  # a core dependency

        self._ps = psutil
        self.pid = pid
        self._t0 = time.monotonic()
        self._last_t: float | None = None
        self._last_disk: Any = None
        self._last_swap: Any = None
        self._procs: dict[int, Any] = {}
        self._proc_io: dict[int, tuple[int, int]] = {}
        self._last_delay: int | None = None
        psutil.cpu_percent(percpu=True)  # prime
        psutil.cpu_times_percent()
        if pid is not None:
            try:
                self._root = psutil.Process(pid)
            except psutil.NoSuchProcess:
                raise MlrigError(f"no process with pid {pid}; give the pid of a running job") from None
            except (psutil.Error, ValueError) as exc:
                raise MlrigError(f"cannot watch pid {pid} ({exc}); give the pid of a job you own") from None

    def _tree(self) -> list[Any]:
        if self.pid is None:
            return []
        ps = self._ps
        try:
            procs = [self._root, *self._root.children(recursive=True)]
        except ps.Error:
            return []
        out = []
        for p in procs:
            cached = self._procs.get(p.pid)
            if cached is None:
                cached = p
                self._procs[p.pid] = p
                try:
                    p.cpu_percent(None)  # prime; first reading is meaningless
                except ps.Error:
                    continue
            out.append(cached)
        return out

    def sample(self) -> HostSample:
        ps = self._ps
        now = time.monotonic()
        dt = (now - self._last_t) if self._last_t is not None else 0.0
        per_core = ps.cpu_percent(percpu=True)
        times = ps.cpu_times_percent()
        vm = ps.virtual_memory()
        sw = ps.swap_memory()
        disk = ps.disk_io_counters()

        def rate(new: float, old: float) -> float:
            return max(0.0, (new - old) / dt) if dt > 0 else 0.0

        s = HostSample(
            t_s=now - self._t0, cpu_percent_per_core=list(per_core),
            iowait_percent=getattr(times, "iowait", None),
            ram_used_bytes=int(vm.total - vm.available), ram_total_bytes=int(vm.total),
            swap_used_bytes=int(sw.used), swap_total_bytes=int(sw.total),
        )
        if self._last_swap is not None:
            s.swap_in_bytes_s = rate(sw.sin, self._last_swap.sin)
            s.swap_out_bytes_s = rate(sw.sout, self._last_swap.sout)
        if disk is not None and self._last_disk is not None:
            s.disk_read_bytes_s = rate(disk.read_bytes, self._last_disk.read_bytes)
            s.disk_write_bytes_s = rate(disk.write_bytes, self._last_disk.write_bytes)
        self._last_swap, self._last_disk = sw, disk

        rd = wr = 0.0
        for p in self._tree():
            try:
                with p.oneshot():
                    info = ProcInfo(pid=p.pid, name=p.name(), cpu_percent=p.cpu_percent(None),
                                    rss_bytes=p.memory_info().rss, is_root=p.pid == self.pid)
                    io = p.io_counters() if hasattr(p, "io_counters") else None
            except (ps.Error, OSError):
                continue
            s.procs.append(info)
            if io is not None:
                old = self._proc_io.get(p.pid)
                if old is not None:
                    rd += rate(io.read_bytes, old[0])
                    wr += rate(io.write_bytes, old[1])
                self._proc_io[p.pid] = (io.read_bytes, io.write_bytes)
        s.proc_read_bytes_s, s.proc_write_bytes_s = rd, wr
        delay = _run_delay_ns([p.pid for p in s.procs]) if s.procs else None
        if delay is not None and self._last_delay is not None and dt > 0:
            s.proc_run_delay_s_per_s = max(0.0, (delay - self._last_delay) / 1e9 / dt)
        self._last_delay = delay
        self._last_t = now
        return s


def _run_delay_ns(pids: list[int]) -> int | None:
    """Total run-queue wait (ns) of every thread of `pids`: field 2 of /proc/<pid>/task/<tid>/schedstat
    (Documentation/scheduler/sched-stats.rst: time spent waiting on a runqueue). None off Linux or
    when schedstat is absent. Threads that end between samples make the sum drop; rates clamp at 0."""
    total, seen = 0, False
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                    total += int(f.read().split()[1])
                    seen = True
            except (OSError, ValueError, IndexError):
                continue
    return total if seen else None


class RecordedHostSampler:
    """Replays the host part of a `Recording`; missing host data reads as an idle machine."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.calls = 0

    def sample(self) -> HostSample:
        i = self.calls
        self.calls += 1
        samples = self.recording.samples
        raw = samples[min(i, len(samples) - 1)].get("host", {}) if samples else {}
        s = HostSample.model_validate(raw)
        s.t_s = i * self.recording.interval_s
        return s


def logical_cpus() -> int:
    return os.cpu_count() or 1
