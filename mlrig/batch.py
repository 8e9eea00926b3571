"""Batch evaluation (`mlrig eval`): one plan per input line, one result per output line, line N for
line N, whatever the input holds (docs/PLAN-FORMAT.md, "Batch evaluation").

What holds, whatever the input:
- every problem stays on its line: bad UTF-8, bad JSON, integers past Python's 4,300-digit limit,
  nesting past the recursion limit, NaN/Infinity, a line over `MAX_LINE_BYTES`, a plan naming a
  named pipe or device as its model, and a blank line each become that line's `error`; later lines
  are still evaluated;
- memory is bounded by one chunk of lines (`CHUNK_LINES`, `CHUNK_BYTES`): the input is read line by
  line with a length cap (a 1 GB line is skipped, never held whole);
- a UTF-8 byte-order mark before line 1 is dropped; `\\r\\n` line ends are accepted;
- `id` is echoed exactly as given (a number stays a number, any JSON value), also on error lines;
- every output line is whole: it is written with SIGINT/SIGTERM/SIGHUP held back, so a stopped batch
  leaves only complete lines; when a write fails (disk full) a regular output file is cut back to its
  last complete line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from mlrig.errors import MlrigError
from mlrig.jsonout import json_ready, rounded_dump

if TYPE_CHECKING:
    from mlrig.results import PlanResult

MAX_LINE_BYTES = 1_000_000  # a plan is a few hundred bytes
MAX_LINE_ITEMS = 100_000  # JSON values per line (see userfiles.parse_json)
CHUNK_LINES = 1_024  # plans evaluated together (mlrig.grid.evaluate_cases)
CHUNK_BYTES = 8 * 2**20
_BOM = b"\xef\xbb\xbf"
_HELD = {signal.SIGINT, signal.SIGTERM} | ({signal.SIGHUP} if hasattr(signal, "SIGHUP") else set())


def _strict_json(obj: Any) -> bool:
    """Whether `json_ready` would leave `obj` as it is: plain JSON data (a pydantic `mode="json"` dump:
    dicts, lists, str, int, float, bool, None) without NaN or an infinity. The C encoder checks that
    many times faster than the walk (it raises ValueError on a non-finite float with allow_nan=False)."""
    try:
        json.dumps(obj, allow_nan=False)
    except (ValueError, TypeError, RecursionError):  # anything unusual takes the walk, as before
        return False
    return True


def result_for_line(raw: bytes | None, lineno: int) -> dict[str, Any]:
    """The result (JSON-ready dict) for input line `lineno` (1-based; `raw` without its line end, or
    None for a line that was over `MAX_LINE_BYTES`). Never raises for anything the line holds."""
    out = results_for_lines([(lineno, raw)])[0]
    return out if _strict_json(out) else json_ready(out)  # json_ready: rare, what JSON cannot hold


def results_for_lines(lines: list[tuple[int, bytes | None]]) -> list[dict[str, Any]]:
    """`result_for_line` of each (line number, line), in order, but not yet JSON-ready (`encode_line`
    makes each its output line). The plans are evaluated together (`mlrig.grid.evaluate_cases`: plans
    of one shape share an array pass); each result is the one its line alone would give."""
    out = []
    for case_id, result in evaluated_lines(lines):
        plain = result.model_dump(mode="json")
        plain["id"] = case_id
        out.append(plain)
    return out


def evaluated_lines(lines: list[tuple[int, bytes | None]]) -> list[tuple[Any, PlanResult]]:
    """(the id as given, the result) of each (line number, line), in order: a line that is no plan
    gets a result whose `error` says why; the plans are evaluated together (`results_for_lines`)."""
    from mlrig.grid import evaluate_cases
    from mlrig.results import PlanResult

    out: list[tuple[Any, PlanResult] | None] = []
    cases: list[Any] = []
    ids: list[Any] = []
    for lineno, raw in lines:
        parsed = _case_of_line(raw, lineno)
        if isinstance(parsed, str):
            out.append((None, PlanResult(error=parsed)))
        else:
            out.append(None)
            ids.append(parsed[0])
            cases.append(parsed[1])
    results = iter(zip(ids, evaluate_cases(cases), strict=True))
    return [done if done is not None else next(results) for done in out]


def encoded_chunk(chunk: list[tuple[int, bytes | None]]) -> tuple[list[bytes], bool]:
    """A chunk's output lines (`evaluated_lines`, rounded as every JSON output is, ids as given,
    `encode_line`) and whether any of them is an error: the unit of work of `mlrig eval`, in this
    process or a worker (`ChunkPool`)."""
    with collector_paused():
        results = evaluated_lines(chunk)
        lines = [encode_line(rounded_result(result, case_id)) for case_id, result in results]
        any_error = any(result.error is not None for _, result in results)
        del results  # freed before the collector resumes: its next pass need not walk them
    return lines, any_error


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off for the duration (as it was before, after). A chunk
    makes hundreds of thousands of short-lived objects (models, dicts, strings) and almost no cycles:
    reference counting frees them, and the collector's passes, which also walk every catalog object
    still alive, cost ~6 % of `mlrig eval`'s CPU time (measured in process, 20,000 lines). Whatever cycles the chunk
    leaves are collected once it is done, so memory stays bounded by a chunk."""
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def rounded_result(result: PlanResult, case_id: Any) -> dict[str, Any]:
    """`round_floats(result.model_dump(mode="json"))` with `id` the id as given (unrounded), in one walk
    over the result's models (`jsonout.rounded_dump`: its validation entries, frozen objects every plan
    of a scope shares, are dumped once each). Encode it (`encode_line`), do not change it."""
    plain = rounded_dump(result)
    plain["id"] = case_id
    return plain


def default_jobs() -> int:
    """Worker processes for a large batch: the CPUs this process may run on, at most 8 unless `-j` asks
    for more (each worker holds its own copy of the catalogs, and one process reads and writes every
    line; not measured beyond the 2 cores of the benchmark machine)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus))


def _worker_signals() -> None:
    """A worker ignores Ctrl-C and SIGHUP (a terminal sends them to the whole process group): the main
    process alone stops the batch, writes the summary and shuts the pool down. SIGTERM keeps its
    default, so a worker can always be killed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(AttributeError, ValueError, OSError):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)  # forked while the parent held them (ChunkPool.map)


class ChunkPool:
    """`encoded_chunk` of each chunk, in input order, on `jobs` worker processes: chunks are independent
    (each result is the one its line alone would give), so the output is byte for byte the one-process
    output. At most 2 x jobs chunks are in flight, so memory stays bounded by a few chunks. An input of
    one chunk, or jobs = 1, is evaluated here without starting a pool; a pool that breaks (a worker
    killed, e.g. by the kernel's out-of-memory killer) leaves its chunks to this process.

        with ChunkPool(jobs) as pool:
            for lines, any_error in pool.map(read_chunks(source)): ...
    """

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self._executor: Any = None

    def __enter__(self) -> ChunkPool:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._executor is not None:  # chunks not started are dropped; running ones end by themselves
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def map(self, chunks: Iterator[list[tuple[int, bytes | None]]]) -> Iterator[tuple[list[bytes], bool]]:
        import collections
        import itertools

        if self.jobs == 1:  # each chunk as it comes: no read-ahead (from a pipe it would wait for input)
            yield from map(encoded_chunk, chunks)
            return
        first = next(chunks, None)
        if first is None:
            return
        second = next(chunks, None)
        if second is None:  # one chunk: not worth starting workers
            yield encoded_chunk(first)
            return
        pending: collections.deque[tuple[list[tuple[int, bytes | None]], Any]] = collections.deque()
        # The pool's threads (its manager and queue feeder, started by the first submit) inherit this
        # thread's signal mask: started with the signals held, they never take SIGINT/SIGTERM/SIGHUP, so
        # the kernel delivers those to this thread alone and `signals_held` still guards every write.
        with signals_held():
            self._executor = self._start()
            pending.append((first, self._submit(first)))
        for chunk in itertools.chain((second,), chunks):
            pending.append((chunk, self._submit(chunk)))
            if len(pending) >= 2 * self.jobs:
                yield self._result(*pending.popleft())
        while pending:
            yield self._result(*pending.popleft())

    def _start(self) -> Any:
        import multiprocessing
        import sys
        from concurrent.futures import ProcessPoolExecutor

        # fork on Linux: the workers start with mlrig and its catalogs already loaded (no re-import);
        # elsewhere the platform's default (spawn on macOS and Windows)
        context = multiprocessing.get_context("fork") if sys.platform == "linux" else None
        return ProcessPoolExecutor(self.jobs, mp_context=context, initializer=_worker_signals)

    def _submit(self, chunk: list[tuple[int, bytes | None]]) -> Any:
        from concurrent.futures.process import BrokenProcessPool

        if self._executor is None:
            return None
        try:
            return self._executor.submit(encoded_chunk, chunk)
        except BrokenProcessPool:
            return None

    def _result(self, chunk: list[tuple[int, bytes | None]], future: Any) -> tuple[list[bytes], bool]:
        from concurrent.futures.process import BrokenProcessPool

        if future is not None:
            try:
                return future.result()
            except BrokenProcessPool:  # this chunk and every one after it: evaluated here
                if self._executor is not None:
                    self._executor.shutdown(wait=False, cancel_futures=True)
                    self._executor = None
        return encoded_chunk(chunk)


def _case_of_line(raw: bytes | None, lineno: int) -> tuple[Any, Any] | str:
    """(the id as given, the plan to evaluate) from one input line, or the line's error."""
    from mlrig.userfiles import parse_json

    if raw is None:
        return f"line {lineno}: over {MAX_LINE_BYTES:,} bytes; a plan is a few hundred bytes"
    if lineno == 1 and raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    if not raw.strip():
        return f"line {lineno}: blank line; put one plan (a JSON object) on every line"
    try:
        obj = parse_json(raw, f"line {lineno}", max_items=MAX_LINE_ITEMS)
    except MlrigError as exc:
        return str(exc)
    case_id = obj.get("id") if isinstance(obj, dict) else None
    case = obj
    if isinstance(obj, dict) and case_id is not None and not isinstance(case_id, str):
        case = {k: v for k, v in obj.items() if k != "id"}  # a plan's id is text; echo other ids as given
    return case_id, case


def read_lines(stream: IO[bytes], max_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """Lines without their line end (`\\n`, `\\r\\n`); None for a line over `max_bytes`, which is skipped
    in bounded chunks rather than held. A last line without a line end counts as a line."""
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1].removesuffix(b"\r")
        elif len(line) <= max_bytes:
            yield line.removesuffix(b"\r")
        else:
            while True:
                more = stream.readline(2**20)
                if not more or more.endswith(b"\n"):
                    break
            yield None


def is_regular_file(stream: IO[bytes]) -> bool | None:
    """Whether the stream reads a regular file (all of it there to read: no pipe or terminal to wait
    on); None when it has no descriptor (a test's BytesIO)."""
    import stat

    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):
        return None


def read_chunks(stream: IO[bytes], max_lines: int = CHUNK_LINES,
                max_bytes: int = CHUNK_BYTES) -> Iterator[list[tuple[int, bytes | None]]]:
    """`read_lines` numbered from 1 and gathered into chunks of up to `max_lines` lines or `max_bytes`
    bytes, so a batch evaluates many plans at once with memory bounded by one chunk. From a pipe or a
    terminal a chunk also ends whenever no more input is waiting: a plan fed in one at a time gets its
    result at once, never held back for lines not yet written."""
    import select

    regular = is_regular_file(stream)
    waits = regular is False  # a pipe or terminal; no descriptor (a test's BytesIO): never waits
    fd = stream.fileno() if waits else -1
    chunk: list[tuple[int, bytes | None]] = []
    size = 0
    for lineno, raw in enumerate(read_lines(stream), 1):
        chunk.append((lineno, raw))
        size += len(raw or b"")
        if len(chunk) >= max_lines or size >= max_bytes or (waits and not select.select([fd], [], [], 0)[0]):
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back for the duration (delivered right after): a write in between
    cannot be cut short by the handler raising. A no-op off the main thread or without pthread_sigmask."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    except (AttributeError, ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def encode_line(result: dict[str, Any]) -> bytes:
    """One output line: the result as compact strict JSON, UTF-8 (a NaN or infinity, should one occur,
    as null). orjson writes a result ~10x faster than the json module (a 3 KB result: ~4 us against
    ~40 us, which alone was most of `mlrig eval`'s budget per line); what orjson refuses (an integer
    beyond 64 bits, a non-text key, a lone surrogate, very deep nesting: only echoed ids and odd
    input carry those) the json module writes, in the same compact form, with non-ASCII escaped."""
    import orjson

    try:
        return orjson.dumps(result, option=orjson.OPT_APPEND_NEWLINE)
    except (orjson.JSONEncodeError, TypeError):
        text = json.dumps(json_ready(result), allow_nan=False, separators=(",", ":"))
        return (text + "\n").encode("utf-8")


class LineSink:
    """Where results go: whole lines, each written completely (short writes retried) with signals held.

    `fd` None means a stream without a descriptor (a test runner's captured stdout)."""

    def __init__(self, fd: int | None, stream: IO[bytes] | None, name: str, *, close: bool) -> None:
        self.fd, self.stream, self.name, self._close = fd, stream, name, close
        self.lines = 0
        self.bytes = 0
        self._truncatable = False
        if fd is not None and close:  # only a file mlrig opened (and emptied) may be cut back
            import stat

            with contextlib.suppress(OSError):
                self._truncatable = stat.S_ISREG(os.fstat(fd).st_mode)

    def write_line(self, result: dict[str, Any]) -> None:
        self.write_lines([result])

    def write_lines(self, results: list[dict[str, Any]]) -> None:
        """Write these results, a line each, in one go (`write_encoded`)."""
        self.write_encoded([encode_line(r) for r in results])

    def write_encoded(self, encoded: list[bytes]) -> None:
        """Write these lines (each `encode_line`'s, ending in a line end) in one go. On a failed write a
        regular file mlrig opened is cut back to the last whole line; `lines` counts the whole lines on
        disk either way."""
        data = b"".join(encoded)
        with signals_held():
            written = 0
            try:
                if self.fd is None:
                    assert self.stream is not None
                    self.stream.write(data)
                    self.stream.flush()
                    written = len(data)
                else:
                    view = memoryview(data)
                    while view:
                        n = os.write(self.fd, view)
                        written += n
                        view = view[n:]
            except OSError:
                whole = data.count(b"\n", 0, written)  # lines wholly on disk before the failure
                kept = sum(len(x) for x in encoded[:whole])
                if self._truncatable:  # a partial line would read as a corrupt result: cut it off
                    with contextlib.suppress(OSError):
                        os.ftruncate(self.fd, self.bytes + kept)  # type: ignore[arg-type]
                self.lines += whole
                self.bytes += kept
                raise
            # counted while signals are still held: a signal delivered on leaving this block must
            # find the lines both on disk and counted (the stop summary reports `lines`)
            self.lines += len(encoded)
            self.bytes += len(data)

    def close(self) -> None:
        if self._close and self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def count_lines(stream: IO[bytes], cap_bytes: int = 256 * 2**20) -> int | None:
    """All the lines of a seekable stream, from its start (None as for `count_lines_left`). A stopped
    batch reports its total this way: the line being read when the signal came may not have been
    counted as read yet, so "read so far + left" could be one short."""
    try:
        if not stream.seekable():
            return None
        stream.seek(0)
    except (OSError, ValueError):
        return None
    return count_lines_left(stream, cap_bytes)


def count_lines_left(stream: IO[bytes], cap_bytes: int = 256 * 2**20) -> int | None:
    """Lines not yet read from a seekable stream (None when it is not seekable or more than `cap_bytes`
    remain: counting must not keep a stopped command busy)."""
    try:
        if not stream.seekable():
            return None
        pos = stream.tell()
        size = os.fstat(stream.fileno()).st_size
    except (OSError, ValueError):
        return None
    if size - pos > cap_bytes:
        return None
    n, last = 0, b"\n"
    while chunk := stream.read(2**20):
        n += chunk.count(b"\n")
        last = chunk[-1:]
    return n + (last != b"\n")
