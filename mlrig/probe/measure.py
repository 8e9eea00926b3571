"""Measure the machine: host memory bandwidth, CPU matmul rate, disk, and (with torch+CUDA) the GPU.

Method notes (also stored in each result's `method`):
- Memory bandwidth follows STREAM (J. McCalpin, https://www.cs.virginia.edu/stream/): copy, scale,
  add, triad on float64 arrays much larger than the last-level cache; best of N repetitions; bytes
  counted as STREAM does (copy/scale 2 arrays, add 3) without write-allocate traffic. numpy runs triad
  as two passes (tmp = s*c; a = b + tmp), so triad is counted as the 5 array transfers numpy really
  makes. Threads: a pool over contiguous chunks (numpy ufuncs release the GIL).
- CPU matmul: float32 n x n numpy matmul (the BLAS numpy links), 2*n^3 FLOP each, best of N.
- Disk: a bounded temporary file in the chosen directory, always deleted; sequential write timed
  including fsync; reads via O_DIRECT where the filesystem allows, else page cache dropped with
  posix_fadvise(DONTNEED), which the kernel may ignore — then read figures can be inflated.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mlrig.errors import MlrigError
from mlrig.probe.models import DiskBench, GpuMeasurement, MatmulResult, StreamResult

Progress = Callable[[str], None]


def _noop(_: str) -> None:
    pass


def stream_bandwidth(array_bytes: int, *, threads: int | None = None, repeats: int = 5) -> StreamResult:
    """STREAM copy/scale/add/triad in GB/s (10^9 B/s); three float64 arrays of `array_bytes` each."""
    import numpy as np

    if array_bytes < 1 << 20:
        raise MlrigError(f"stream array size {array_bytes} B is too small; use at least 1 MiB")
    threads = threads or os.cpu_count() or 1
    n = array_bytes // 8
    a = np.full(n, 1.0)
    b = np.full(n, 2.0)
    c = np.zeros(n)
    s = 3.0
    bounds = [(n * i // threads, n * (i + 1) // threads) for i in range(threads)]
    tmp = np.empty(n)

    def copy(lo: int, hi: int) -> None:
        np.copyto(c[lo:hi], a[lo:hi])

    def scale(lo: int, hi: int) -> None:
        np.multiply(c[lo:hi], s, out=b[lo:hi])

    def add(lo: int, hi: int) -> None:
        np.add(a[lo:hi], b[lo:hi], out=c[lo:hi])

    def triad(lo: int, hi: int) -> None:
        np.multiply(c[lo:hi], s, out=tmp[lo:hi])
        np.add(b[lo:hi], tmp[lo:hi], out=a[lo:hi])

    kernels: list[tuple[str, Callable[[int, int], None], int]] = [
        ("copy", copy, 2), ("scale", scale, 2), ("add", add, 3), ("triad", triad, 5)]
    best = {name: 0.0 for name, _, _ in kernels}
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            for name, fn, arrays in kernels:
                t = time.perf_counter()
                list(pool.map(lambda lh, f=fn: f(*lh), bounds))
                dt = time.perf_counter() - t
                best[name] = max(best[name], arrays * 8 * n / dt / 1e9)
    return StreamResult(copy_gb_s=round(best["copy"], 2), scale_gb_s=round(best["scale"], 2),
                        add_gb_s=round(best["add"], 2), triad_gb_s=round(best["triad"], 2),
                        array_bytes=8 * n, threads=threads,
                        method=f"STREAM-style numpy kernels, {threads} threads, best of {repeats}; "
                               "triad counted as numpy's 5 transfers; no write-allocate")


def cpu_matmul(n: int = 2048, repeats: int = 3) -> MatmulResult:
    """float32 n x n matmul rate in GFLOP/s (2 n^3 FLOP per product), best of `repeats` after a warm-up."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n), dtype=np.float32)
    y = rng.standard_normal((n, n), dtype=np.float32)
    x @ y
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        x @ y
        best = max(best, 2 * n**3 / (time.perf_counter() - t) / 1e9)
    return MatmulResult(gflops=round(best, 1), n=n,
                        method=f"numpy float32 {n}x{n} matmul (BLAS, all threads), best of {repeats}")


def _aligned(size: int) -> mmap.mmap:
    """Anonymous mmap: page-aligned, as O_DIRECT requires."""
    return mmap.mmap(-1, size)


@contextlib.contextmanager
def _temp_file(directory: Path) -> Iterator[Path]:
    path = directory / f".mlrig-probe-{os.getpid()}-{time.monotonic_ns()}.tmp"
    try:
        yield path
    finally:  # also on Ctrl-C, SIGTERM and SIGHUP (mlrig.interrupts)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _write_all(fd: int, data: bytes) -> None:
    """os.write may write less than asked (a full disk, a signal): loop until all of it is written."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(28, os.strerror(28))  # ENOSPC: the kernel accepted nothing
        view = view[n:]


@contextlib.contextmanager
def _disk_errors(directory: Path) -> Iterator[None]:
    """An I/O failure during the disk test (disk full, quota, I/O error) as one line; the temporary
    file is removed by `_temp_file` around it."""
    try:
        yield
    except OSError as exc:
        raise MlrigError(f"disk test in {directory} failed: {exc.strerror or exc}; free some space, "
                         "use --quick (32 MiB) or choose another --dir") from None


def _open_read(path: Path, notes: list[str]) -> tuple[int, bool]:
    flag = getattr(os, "O_DIRECT", 0)
    if flag:
        try:
            return os.open(path, os.O_RDONLY | flag), True
        except OSError:
            notes.append("O_DIRECT refused by this filesystem")
    fd = os.open(path, os.O_RDONLY)
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    notes.append("reads go through the page cache (posix_fadvise DONTNEED asked to drop it); "
                 "read figures may be inflated")
    return fd, False


def disk_bench(directory: str | Path, file_bytes: int = 256 * 2**20, *, random_reads_s: float = 2.0,
               progress: Progress = _noop) -> DiskBench:
    """Sequential write/read and random 4 KiB reads on a bounded temp file in `directory`."""
    d = Path(directory).expanduser()
    if not d.is_dir():
        raise MlrigError(f"--dir {d} is not a directory; give an existing directory on the disk to test")
    if not os.access(d, os.W_OK):
        raise MlrigError(f"--dir {d} is not writable; choose a directory you can write to")
    chunk = 1 << 20
    file_bytes = max(chunk, file_bytes // chunk * chunk)
    free = shutil.disk_usage(d).free
    if file_bytes * 1.1 + 64 * 2**20 > free:
        raise MlrigError(f"not enough free space in {d}: the disk test needs {file_bytes / 2**20:.0f} MiB "
                         f"plus margin, {free / 2**20:.0f} MiB free; use --quick or another --dir")
    import numpy as np

    notes: list[str] = []
    block = np.random.default_rng(1).integers(0, 256, chunk, dtype=np.uint8).tobytes()  # incompressible
    with _temp_file(d) as path, _disk_errors(d):
        progress("disk: sequential write")
        t = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for _ in range(file_bytes // chunk):
                _write_all(fd, block)
            os.fsync(fd)
        finally:
            os.close(fd)
        write_mb_s = file_bytes / (time.perf_counter() - t) / 1e6

        progress("disk: sequential read")
        fd, direct = _open_read(path, notes)
        buf = _aligned(chunk)
        try:
            t = time.perf_counter()
            off = 0
            while off < file_bytes:
                got = os.preadv(fd, [buf], off)
                if got <= 0:
                    break
                off += got
            read_mb_s = off / (time.perf_counter() - t) / 1e6

            progress("disk: random 4 KiB reads")
            small = _aligned(4096)
            rng = np.random.default_rng(2)
            offsets = rng.integers(0, file_bytes // 4096, 200_000) * 4096
            count = 0
            t = time.perf_counter()
            deadline = t + random_reads_s
            while count < len(offsets) and (count % 64 or time.perf_counter() < deadline):
                os.preadv(fd, [small], int(offsets[count]))
                count += 1
            dt = time.perf_counter() - t
        finally:
            os.close(fd)
    iops = count / dt
    if not direct:
        notes.append("random-read IOPS likely reflect the page cache, not the device")
    return DiskBench(directory=str(d), file_bytes=file_bytes, seq_write_mb_s=round(write_mb_s, 1),
                     seq_read_mb_s=round(read_mb_s, 1), rand_read_4k_iops=round(iops),
                     rand_read_4k_mb_s=round(iops * 4096 / 1e6, 2), direct_io=direct, notes=notes)


def gpu_measure(index: int, quick: bool = False) -> GpuMeasurement | None:
    """TFLOPS per dtype, device copy bandwidth and host-to-device bandwidth with torch; None without CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        return None
    dev = torch.device("cuda", index)

    def timed(fn: Callable[[], object], reps: int) -> float:
        fn()
        torch.cuda.synchronize(dev)
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize(dev)
        return (time.perf_counter() - t) / reps

    n = 4096 if quick else 8192
    res = GpuMeasurement(method=f"torch {torch.__version__}: {n}^3 matmul per dtype; 1 GiB D2D copy "
                                "counted read+write; 256 MiB H2D copies, pinned and pageable")
    for name, dt in (("fp32", torch.float32), ("tf32", torch.float32), ("fp16", torch.float16),
                     ("bf16", torch.bfloat16)):
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        try:
            x = torch.randn(n, n, device=dev, dtype=dt)
            y = torch.randn(n, n, device=dev, dtype=dt)

            def mm(x: torch.Tensor = x, y: torch.Tensor = y) -> object:
                return x @ y

            res.matmul_tflops[name] = round(2 * n**3 / timed(mm, 10) / 1e12, 1)
        except RuntimeError:
            continue
    torch.backends.cuda.matmul.allow_tf32 = False
    res.memory_bandwidth_gb_s = _d2d_gb_s(torch, dev, timed)
    host = torch.empty(2**28 // 4)
    pinned = host.pin_memory()
    d = torch.empty(2**28 // 4, device=dev)
    res.h2d_pinned_gb_s = round(2**28 / timed(lambda: d.copy_(pinned, non_blocking=True), 10) / 1e9, 1)
    res.h2d_pageable_gb_s = round(2**28 / timed(lambda: d.copy_(host), 5) / 1e9, 1)
    return res


def _d2d_gb_s(torch: Any, dev: Any, timed: Callable[[Callable[[], object], int], float]) -> float:
    """Device copy bandwidth, GB/s: 1 GiB copied, counted as read + write (2 GiB moved)."""
    src = torch.empty(2**30 // 4, device=dev)
    dst = torch.empty_like(src)
    return round(2 * 2**30 / timed(lambda: dst.copy_(src), 10) / 1e9, 1)
