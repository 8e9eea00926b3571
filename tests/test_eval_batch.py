"""`mlrig eval` under hostile and careless input: line N of the output answers line N of the input,
every failure stays on its line, the input is never clobbered, memory is bounded by one chunk of lines,
a plan fed in through a pipe is answered at once, and a batch stopped by a signal leaves complete lines
and says how far it got (exit 128+N).

The command runs as a real subprocess (the signal handlers and exit statuses are those of `mlrig`);
waits are on conditions with generous deadlines, never fixed sleeps."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mlrig.batch import MAX_LINE_BYTES, LineSink, encoded_chunk, read_lines, result_for_line

DEADLINE_S = 120.0
GOOD = {"model": "llama-3.1-8b", "hardware": {"gpu": "RTX 4090"}}


def line(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def mlrig(args: list[str], tmp: Path, stdin: bytes | None = None, rss: bool = False,
          ) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MLRIG_HOME": str(tmp / "home"),
           "XDG_CONFIG_HOME": str(tmp / "cfg")}
    # VmHWM (this process's peak RSS, Linux), not getrusage's ru_maxrss: Linux carries ru_maxrss across
    # exec, so a child of a large pytest process would report the parent's peak
    code = ("import atexit, re, sys\n"
            f"if {rss!r}: atexit.register(lambda: print('maxrss_kib', re.search(r'VmHWM:\\s*(\\d+)', "
            "open('/proc/self/status').read()).group(1), file=sys.stderr))\n"
            "from mlrig.cli import main\nsys.argv = ['mlrig', *sys.argv[1:]]\nmain()\n")
    return subprocess.run([sys.executable, "-c", code, *args], input=stdin, capture_output=True,
                          timeout=DEADLINE_S, env=env, stdin=None if stdin is not None else subprocess.DEVNULL)


def results(data: bytes) -> list[dict[str, Any]]:
    """Parse output strictly: every line whole, standard JSON (no NaN/Infinity)."""
    def no_constants(c: str) -> None:
        raise AssertionError(f"non-standard JSON token {c}")

    assert data.endswith(b"\n") or not data
    return [json.loads(ln, parse_constant=no_constants) for ln in data.decode().split("\n")[:-1]]


# ---- output = input ----

@pytest.mark.parametrize("how", ["same path", "symlink", "hard link", "other spelling", "stdin redirected",
                                 "stdout appended"])
def test_output_that_is_the_input_is_refused(tmp_path: Path, how: str) -> None:
    cases = tmp_path / "cases.jsonl"
    content = line(GOOD) + b"\n"
    cases.write_bytes(content)
    out = {"same path": cases, "other spelling": tmp_path / "." / "cases.jsonl", "stdin redirected": cases,
           "symlink": tmp_path / "link.jsonl", "hard link": tmp_path / "hard.jsonl", "stdout appended": cases}[how]
    if how == "symlink":
        out.symlink_to(cases)
    elif how == "hard link":
        os.link(cases, out)
    if how == "stdin redirected":  # mlrig eval - -o X < X
        with cases.open("rb") as f:
            r = subprocess.run([sys.executable, "-m", "mlrig.cli", "eval", "-", "-o", str(out)], stdin=f,
                               capture_output=True, timeout=DEADLINE_S, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    elif how == "stdout appended":  # mlrig eval X >> X: results would be read back as cases, without end
        with cases.open("ab") as f:
            r = subprocess.run([sys.executable, "-m", "mlrig.cli", "eval", str(cases)], stdout=f,
                               stderr=subprocess.PIPE, timeout=DEADLINE_S, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    else:
        r = mlrig(["eval", str(cases), "-o", str(out)], tmp_path)
    assert r.returncode == 2, r.stderr
    assert b"is the cases file itself" in r.stderr and b"Traceback" not in r.stderr
    assert cases.read_bytes() == content  # untouched


# ---- every failure on its own line ----

def test_every_bad_line_stays_on_its_line(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.gguf")
    rows: list[tuple[bytes, Any, str | None]] = [  # (input line, id expected back, words of the error or None)
        (b"\xef\xbb\xbf" + line({**GOOD, "id": "bom"}), "bom", None),  # BOM before line 1: accepted
        (b"", None, "line 2: blank line"),
        (b"   \t", None, "line 3: blank line"),
        (line({**GOOD, "id": 7}), 7, None),  # non-string ids echoed as given
        (line({**GOOD, "id": [1, {"a": 2}]}), [1, {"a": 2}], None),
        (line({**GOOD, "id": 1.5, "workload": {"batch_size": 0}}), 1.5, "batch_size"),
        (b'{"id": "big", "x": ' + b"9" * 5000 + b"}", None, "4,300-digit limit"),
        (b"[" * 100_000 + b"]" * 100_000, None, "nested too deeply"),
        (b'{"id": "nan", "model": "llama-3.1-8b", "workload": {"batch_size": NaN}}', None, "not a finite number"),
        (b'{"id": "\xff\xfe"}', None, "not UTF-8"),
        (b"{not json", None, "line 11 is not valid JSON"),
        (line({"id": "fifo", "model": str(tmp_path / "fifo.gguf")}), "fifo", "not a regular file"),
        (line({"id": "dev", "model": "/dev/zero"}), "dev", "not a regular file"),
        (line({"id": "unknown key", **GOOD, "hardwre": {}}), "unknown key", "hardwre"),
        (b"x" * (MAX_LINE_BYTES + 1), None, "line 15: over 1,000,000 bytes"),
        (line([1, 2]), None, ""),
        (line({**GOOD, "id": "crlf"}) + b"\r", "crlf", None),
        (line({**GOOD, "id": "last, no newline"}), "last, no newline", None),
    ]
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(b"\n".join(r[0] for r in rows))  # the last line has no line end
    r = mlrig(["eval", str(cases), "-o", str(tmp_path / "out.jsonl")], tmp_path)
    assert r.returncode == 1, r.stderr  # some lines had errors; none stopped the batch
    assert r.stderr.strip() == b"" or b"note: no GPU" in r.stderr, r.stderr
    out = results((tmp_path / "out.jsonl").read_bytes())
    assert len(out) == len(rows)
    for i, ((_, want_id, words), got) in enumerate(zip(rows, out, strict=True), 1):
        assert got["id"] == want_id, (i, got)
        if words is None:
            assert got["error"] is None and got["fits"] is True, (i, got["error"])
        else:
            assert got["error"] and words in got["error"], (i, got["error"])
            assert "internal error" not in got["error"]


def test_stdin_and_strict_json_output(tmp_path: Path) -> None:
    r = mlrig(["eval", "-"], tmp_path, stdin=line({**GOOD, "id": None}) + b"\n\n")
    out = results(r.stdout)
    assert [o["id"] for o in out] == [None, None] and out[0]["error"] is None and "blank" in out[1]["error"]
    assert r.returncode == 1


# ---- bounded memory ----

class Endless(io.RawIOBase):
    """A stream of `size` bytes of 'x' without a newline, generated on demand; records the largest read."""

    def __init__(self, size: int) -> None:
        self.left, self.largest = size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = min(len(b), self.left)
        self.largest = max(self.largest, len(b))
        b[:n] = b"x" * n
        self.left -= n
        return n


def test_a_gigabyte_line_is_skipped_in_bounded_reads() -> None:
    raw = Endless(2**30)
    stream = io.BufferedReader(raw, buffer_size=2**20)
    got = list(read_lines(stream))
    assert got == [None] and raw.left == 0
    assert raw.largest <= 2 * 2**20  # never asked for more than a couple of MiB at once


def test_eval_of_a_1_gb_file_stays_small(tmp_path: Path) -> None:
    """A sparse 1 GiB file (one line of NUL bytes) followed by a good line: the long line is an error,
    the good line is evaluated, and peak RSS stays far below the file size."""
    if not Path("/proc/self/status").exists():
        pytest.skip("peak RSS is read from /proc/self/status (Linux)")
    cases = tmp_path / "big.jsonl"
    with cases.open("wb") as f:
        f.truncate(2**30)
        f.seek(2**30)
        f.write(b"\n" + line({**GOOD, "id": "after"}) + b"\n")
    r = mlrig(["eval", str(cases), "-o", str(tmp_path / "out.jsonl")], tmp_path, rss=True)
    out = results((tmp_path / "out.jsonl").read_bytes())
    assert [o["id"] for o in out] == [None, "after"] and "over 1,000,000 bytes" in out[0]["error"]
    m = re.search(rb"maxrss_kib (\d+)", r.stderr)
    assert m, r.stderr
    assert int(m.group(1)) < 300 * 1024, int(m.group(1))  # interpreter + planner ~40-100 MiB; 1 GiB read is not


# ---- faults while writing ----

def test_disk_full_is_one_line(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(line(GOOD) + b"\n")
    r = mlrig(["eval", str(cases), "-o", "/dev/full"], tmp_path)
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    assert re.fullmatch(rb"mlrig: error: cannot write results to /dev/full: No space left on device after 0 "
                        rb"lines .*\n", r.stderr), r.stderr


def test_a_short_write_then_enospc_leaves_only_whole_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.jsonl"
    sink = LineSink(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), None, str(out), close=True)
    sink.write_line({"id": 1})
    real_write = os.write
    calls = {"n": 0}

    def half_then_full(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError):
        sink.write_line({"id": 2, "pad": "y" * 100})
    monkeypatch.undo()
    sink.close()
    assert out.read_bytes() == b'{"id":1}\n' and sink.lines == 1


def test_result_for_line_never_raises_on_odd_values() -> None:
    for raw in (b"null", b"0", b'"text"', b"[]", b"{}", b'{"id": {}}', b'{"model": 1e308}', b"\x00"):
        out = result_for_line(raw, 3)
        assert out["error"] and "internal error" not in out["error"], (raw, out["error"])



def test_strict_json_check_agrees_with_the_walk() -> None:
    """`result_for_line` skips the `json_ready` walk when the C encoder finds nothing to replace; that
    must be exactly when the walk would change nothing (NaN and infinities, however deep, take the walk)."""
    from mlrig.batch import _strict_json, json_ready

    plain = [{"a": 1.5, "b": [1, "x", None, True, {"c": -0.0, "d": 1e308}]}, [], {}, "s", 3, 2.5, None]
    for obj in plain:
        assert _strict_json(obj) and json_ready(obj) == obj
    odd = [float("nan"), {"a": [{"b": float("inf")}]}, [1.0, float("-inf")], {"x": {"y": [[float("nan")]]}}]
    for obj in odd:
        assert not _strict_json(obj)
        assert "NaN" not in json.dumps(json_ready(obj)) and "Infinity" not in json.dumps(json_ready(obj))
    assert not _strict_json({"a": object()})  # not JSON at all: the walk decides, as before


def test_results_are_strict_json_from_a_whole_file() -> None:
    """A batch of ordinary plans gives results the encoder accepts with allow_nan=False."""
    lines = [json.dumps({"id": i, "model": m, "hardware": {"gpu": g}, "workload": {"precision": q}})
             for i, (m, g, q) in enumerate([("llama-3.1-8b", "RTX 4090", "q4_k_m"), ("qwen2.5-32b", "H100 SXM", "fp8"),
                                            ("mistral-7b", "A100 80GB", "bf16")])]
    for n, raw in enumerate(lines, 1):
        out = result_for_line(raw.encode(), n)
        assert out["error"] is None and out["id"] == n - 1
        json.dumps(out, allow_nan=False)


# ---- signals ----

def _sigint_default() -> None:
    """A test run started in the background (`pytest &`) inherits SIGINT ignored, and a Python child
    would keep ignoring it (as mlrig does under nohup): give the child the ordinary disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("sig", "to_stdout"), [(signal.SIGTERM, False), (signal.SIGINT, False),
                                                  (signal.SIGTERM, True)])
def test_batch_stopped_by_a_signal_leaves_complete_lines_and_a_summary(
        tmp_path: Path, sig: signal.Signals, to_stdout: bool) -> None:
    n_lines = 100_000  # minutes of work: the signal always arrives mid-batch
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(b"".join(line({**GOOD, "id": i}) + b"\n" for i in range(n_lines)))
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MLRIG_HOME": str(tmp_path / "home")}
    args = [sys.executable, "-m", "mlrig.cli", "eval", str(cases)]
    with out.open("wb") as stdout_file:
        proc = subprocess.Popen(args if to_stdout else [*args, "-o", str(out)], stdin=subprocess.DEVNULL,
                                stdout=stdout_file if to_stdout else subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=env, preexec_fn=_sigint_default)
        try:
            end = time.monotonic() + DEADLINE_S
            while (not out.exists() or out.read_bytes().count(b"\n") < 20) and proc.poll() is None:
                assert time.monotonic() < end, "no results appeared"
                time.sleep(0.05)
            assert proc.poll() is None
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=DEADLINE_S)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 128 + sig, err
    assert b"Traceback" not in err
    got = results(out.read_bytes())  # every line whole and valid
    assert [o["id"] for o in got] == list(range(len(got))) and 20 <= len(got) < n_lines
    assert all(o["error"] is None for o in got)
    name = "Ctrl-C" if sig == signal.SIGINT else sig.name
    m = re.search(rb"mlrig: eval stopped by " + name.encode() + rb": ([\d,]+) of ([\d,]+) lines evaluated", err)
    assert m, err
    assert int(m.group(1).replace(b",", b"")) == len(got), err
    assert int(m.group(2).replace(b",", b"")) == n_lines


def test_cases_from_a_pipe_are_read_as_they_come(tmp_path: Path) -> None:
    """`mlrig eval <(generate-cases)`: a named pipe as the cases file is streamed (not refused, not
    size-checked), and its results come out in order."""
    fifo = tmp_path / "cases.fifo"
    os.mkfifo(fifo)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MLRIG_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "mlrig.cli", "eval", str(fifo)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        end = time.monotonic() + DEADLINE_S
        while True:  # open without blocking: ENXIO until eval has opened its end (never hang if it died)
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as exc:
                assert exc.errno == errno.ENXIO and proc.poll() is None and time.monotonic() < end, exc
                time.sleep(0.05)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb") as w:
            w.write(line({**GOOD, "id": "a"}) + b"\n\n" + line({**GOOD, "id": "b"}) + b"\n")
        out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err  # the blank line is an error line
    assert [o["id"] for o in results(out)] == ["a", None, "b"]


def test_a_plan_fed_through_a_pipe_is_answered_before_the_next_arrives(tmp_path: Path) -> None:
    """eval reads in chunks, but from a pipe a chunk ends when no more input waits: a program that writes
    one plan and waits for its result (a co-process) gets it, line by line, without closing the pipe."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MLRIG_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-c", "import sys\nfrom mlrig.cli import main\n"
                             "sys.argv = ['mlrig', 'eval', '-']\nmain()\n"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for n in range(3):
            proc.stdin.write(line({**GOOD, "id": n, "workload": {"batch_size": n + 1}}) + b"\n")
            proc.stdin.flush()
            import select

            ready, _, _ = select.select([proc.stdout], [], [], DEADLINE_S)  # the pipe stays open
            assert ready, f"no result for plan {n} within {DEADLINE_S:.0f} s"
            got = results(proc.stdout.readline())
            assert got[0]["id"] == n and got[0]["error"] is None
        proc.stdin.close()
        assert proc.wait(timeout=DEADLINE_S) == 0 and proc.stdout.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_line_orjson_refuses_is_still_written_as_strict_json() -> None:
    """encode_line: orjson refuses integers beyond 64 bits, non-text keys and lone surrogates (an echoed
    id can hold any of them); the json module then writes the line, NaN still as null."""
    from mlrig.batch import encode_line

    for odd in ({"id": 2**70}, {"id": {1: "a"}}, {"id": "\ud800"}):
        line = encode_line({**odd, "x": float("nan"), "y": 1.5})
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        back = json.loads(line)
        assert back["x"] is None and back["y"] == 1.5
        assert back["id"] == (odd["id"] if not isinstance(odd["id"], dict) else {"1": "a"})
    assert encode_line({"id": "é", "v": float("inf")}) == '{"id":"é","v":null}\n'.encode()


# ---- worker processes ----

def _mixed_cases(n: int) -> bytes:
    """n lines of several shapes, with error lines among them."""
    rows = []
    for i in range(n):
        if i % 97 == 0:
            rows.append(b"{not json")
            continue
        gpu = ("RTX 4090", "H100 SXM", "A100 80GB")[i % 3]
        rows.append(line({"id": i, "model": ("llama-3.1-8b", "qwen2.5-7b")[i % 2], "hardware": {"gpu": gpu},
                          "workload": {"batch_size": 1 + i % 7, "context_tokens": 1024 * (1 + i % 5)}}))
    return b"\n".join(rows) + b"\n"


def test_workers_write_the_same_bytes_as_one_process(tmp_path: Path) -> None:
    """eval -j 2 over several chunks (a regular file of 2,500 lines) gives the output of -j 1, byte for
    byte, with the same exit status (error lines among them: 1)."""
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(_mixed_cases(2_500))
    one = mlrig(["eval", str(cases), "-j", "1"], tmp_path)
    two = mlrig(["eval", str(cases), "-j", "2"], tmp_path)
    assert one.returncode == two.returncode == 1, two.stderr
    assert two.stdout == one.stdout and len(results(two.stdout)) == 2_500


_PARENT: list[int] = []
_REAL_ENCODED_CHUNK = encoded_chunk


def _dies_in_a_worker(chunk: list[tuple[int, bytes | None]]) -> tuple[list[bytes], bool]:
    """encoded_chunk, except that a worker process dies on it (module level: the pool pickles it)."""
    if os.getpid() not in _PARENT:
        os._exit(9)
    return _REAL_ENCODED_CHUNK(chunk)


def test_a_pool_that_breaks_leaves_its_chunks_to_the_main_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed mid-batch (say by the out-of-memory killer) costs no line: ChunkPool evaluates the
    chunks it had sent there itself, and the lines come out complete and in order."""
    import mlrig.batch as batch

    _PARENT[:] = [os.getpid()]
    chunks = list(batch.read_chunks(io.BytesIO(_mixed_cases(300)), max_lines=40))
    expected = [batch.encoded_chunk(c) for c in chunks]
    monkeypatch.setattr(batch, "encoded_chunk", _dies_in_a_worker)  # the forked workers get it too
    with batch.ChunkPool(2) as pool:
        got = list(pool.map(iter(chunks)))
    assert got == expected and len(got) == 8
