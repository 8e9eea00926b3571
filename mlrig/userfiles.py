"""One loader for every file a user hands mlrig (plans, config.json, safetensors headers and indexes,
price and build files, JSON lines): bounded, non-blocking, and every failure a one-line `MlrigError`.

What it guarantees, whatever the input:
- only regular files are opened: a named pipe, device, socket or folder is refused after `os.stat`,
  before `open`, and the open itself uses `O_NONBLOCK` so a file swapped for a FIFO in between cannot
  block either (the descriptor is checked again with `fstat`);
- a size cap per kind of file, checked before reading and again while reading (a file that grows);
- text must be UTF-8 (a leading byte-order mark is dropped);
- JSON and TOML syntax errors, integers over Python's int-string limit (4,300 digits, PEP 651's
  sibling CVE-2020-10735 guard), nesting deep enough to exhaust the recursion limit, and non-finite
  numbers (`NaN`, `Infinity`, `inf`, `nan`, `1e999`) all become one line naming the file and the fix;
- JSON documents carry a structural budget (`max_items`): an upper bound on the number of values,
  counted in the raw bytes before parsing, so memory stays proportional to a small multiple of the
  input size and a crafted header cannot expand into gigabytes of Python objects.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from mlrig.errors import MlrigError

T = TypeVar("T")

KIB, MIB = 2**10, 2**20


def _one_line(text: str, limit: int = 200) -> str:
    """Collapse whitespace so an error stays on one line, and cut it to `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _human(n: int) -> str:
    if n >= MIB:
        return f"{n / MIB:g} MiB"
    if n >= KIB:
        return f"{n / KIB:g} KiB"
    return f"{n} bytes"


def expand_user(name: str) -> Path:
    """`Path(name).expanduser()`, with a `~user` that does not exist as one line, not a RuntimeError."""
    try:
        return Path(name).expanduser()
    except RuntimeError:
        user = name[1:].split("/", 1)[0]
        raise MlrigError(f"{_one_line(name)!r}: there is no user {_one_line(user)!r} to expand '~{user}' for; "
                         "give the full path (or a catalog name without '~')") from None


def path_exists(path: str | Path) -> bool:
    """`Path.exists` that answers False instead of raising for names the OS refuses outright (a
    component over 255 bytes: ENAMETOOLONG; a NUL byte; an unencodable character)."""
    try:
        os.stat(path)
        return True
    except (OSError, ValueError):
        return False


def check_regular_file(path: str | Path, what: str, missing: str = "check the path") -> os.stat_result:
    """`os.stat` the path and refuse anything that is not a regular file (never opens it).

    `missing` is the fix suggested when the file does not exist."""
    p = Path(path)
    try:
        st = os.stat(p)
    except (FileNotFoundError, NotADirectoryError):
        raise MlrigError(f"{what} {str(p)!r} not found; {missing}") from None
    except OSError as exc:
        raise MlrigError(f"cannot read {what} {str(p)!r}: {exc.strerror or exc}") from None
    except ValueError as exc:  # embedded NUL byte in the path
        raise MlrigError(f"{what} path {str(p)[:80]!r} is invalid ({exc}); check the path") from None
    if stat.S_ISDIR(st.st_mode):
        raise MlrigError(f"{what} {str(p)!r} is a folder; give a file")
    if not stat.S_ISREG(st.st_mode):
        raise MlrigError(f"{what} {str(p)!r} is not a regular file (a named pipe, device or socket); "
                         "give a file on disk")
    return st


def open_regular(path: str | Path, what: str, missing: str = "check the path") -> tuple[int, int]:
    """Open a regular file for reading without ever blocking; returns (fd, size in bytes).

    The caller owns the descriptor (close it with `os.close`, or wrap it with `os.fdopen`)."""
    p = Path(path)
    check_regular_file(p, what, missing)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        raise MlrigError(f"cannot read {what} {str(p)!r}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced between stat and open
            raise MlrigError(f"{what} {str(p)!r} is not a regular file; give a file on disk")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # regular files never block; restore normal reads
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def parse_open_file(path: str | Path, what: str, parse: Callable[[BinaryIO, int, str], T]) -> T:
    """`parse(file, size, where)` over a regular file opened with `open_regular`; a read failure in the
    middle of it is one line naming the file. For the binary header readers (GGUF, safetensors)."""
    p = Path(path)
    fd, size = open_regular(p, what)
    try:
        with os.fdopen(fd, "rb") as f:
            return parse(f, size, str(p))
    except OSError as exc:
        raise MlrigError(f"cannot read {what} {str(p)!r}: {exc.strerror or exc}") from None


def read_bytes(path: str | Path, what: str, max_bytes: int, missing: str = "check the path") -> bytes:
    """The whole file, at most `max_bytes` (refused with a message naming the cap when larger)."""
    p = Path(path)
    fd, size = open_regular(p, what, missing)
    too_big = MlrigError(f"{what} {str(p)!r} is over {_human(max_bytes)}; a {what} is much smaller "
                         "(is this the right file?)")
    try:
        if size > max_bytes:
            raise too_big
        chunks: list[bytes] = []
        got = 0
        while True:
            chunk = os.read(fd, min(MIB, max_bytes + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if got > max_bytes:
                raise too_big
    except OSError as exc:
        raise MlrigError(f"cannot read {what} {str(p)!r}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def decode_utf8(raw: bytes, where: str) -> str:
    """UTF-8 text (a leading byte-order mark is dropped); anything else is a one-line error."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MlrigError(f"{where} is not UTF-8 text (bad byte at offset {exc.start}); "
                         "save it as UTF-8") from None
    return text[1:] if text.startswith("\ufeff") else text


def first_non_finite(data: Any) -> tuple[str, float] | None:
    """The dotted path and value of the first NaN or infinite float in parsed JSON/TOML, or None.

    Iterative (no recursion), linear in the size of `data`."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, float):
            if not math.isfinite(v):
                return where or "(top level)", v
        elif isinstance(v, dict):
            stack.extend((f"{where}.{k}" if where else str(k), x) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((f"{where}[{i}]", x) for i, x in reversed(list(enumerate(v))))
    return None


def _check_finite(data: Any, where: str) -> None:
    bad = first_non_finite(data)
    if bad is not None:
        field, value = bad
        raise MlrigError(f"{where}: {_one_line(field, 120)} = {value} is not a finite number "
                         "(NaN, infinity or beyond the float range); give a finite number")


def _value_problem(exc: ValueError) -> str:
    """Python's own wording, shortened: the int-string limit message names a function users cannot call."""
    msg = str(exc)
    m = re.search(r"value has (\d+) digits", msg)
    if "integer string conversion" in msg:
        digits = f" of {m.group(1)} digits" if m else ""
        return f"an integer{digits} is longer than the {sys.get_int_max_str_digits():,}-digit limit"
    return _one_line(msg, 120)


def _item_budget(raw: bytes | str, where: str, max_items: int) -> None:
    """Refuse a JSON text that may hold more than `max_items` values, before parsing it.

    Every value after the first in an array or object needs a ',' and every container a '[' or
    '{', so their count bounds the number of values (counts inside strings only over-estimate)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    items = data.count(b",") + data.count(b"[") + data.count(b"{")
    if items > max_items:
        raise MlrigError(f"{where} holds over {max_items:,} JSON values; that is far more than this kind "
                         "of file holds (is this the right file?)")


@contextlib.contextmanager
def _parse_failures(where: str, fmt: str) -> Iterator[None]:
    """What a parser raises on input that is valid syntax but unusable, as one line naming `where`:
    nesting past the recursion limit, integers past the int-string limit, non-finite numbers, memory.
    Syntax errors (JSONDecodeError / TOMLDecodeError) pass through for the caller's own message."""
    import json
    import tomllib

    try:
        yield
    except (json.JSONDecodeError, tomllib.TOMLDecodeError):
        raise
    except RecursionError:
        raise MlrigError(f"{where} is not usable {fmt}: nested too deeply; flatten it") from None
    except ValueError as exc:  # int-string limit, non-finite numbers
        raise MlrigError(f"{where} is not usable {fmt}: {_value_problem(exc)}; "
                         "give finite numbers of ordinary size") from None
    except MemoryError:
        raise MlrigError(f"{where} is too large to parse; give a smaller file") from None


_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def _orjson_reads_alike(raw: bytes, max_items: int) -> bool:
    """Whether orjson, where it accepts `raw`, gives exactly what `parse_json`'s json module path gives
    (orjson is ~5x faster on a plan line): within the item budget, nesting bounded far below the
    recursion limit (at most 256 brackets), and no run of 19 digits (orjson turns integers beyond 64
    bits into floats). What orjson refuses (bad UTF-8 or syntax, a byte-order mark, NaN, Infinity,
    1e400, a lone surrogate) goes the json module's way, for its one-line error or its value."""
    opens = raw.count(b"[") + raw.count(b"{")
    return opens <= 256 and opens + raw.count(b",") <= max_items and _LONG_DIGITS.search(raw) is None


def parse_json(raw: bytes | str, where: str, *, max_items: int = 1_000_000, finite: bool = True) -> Any:
    """JSON from bytes (UTF-8) or text; every failure a one-line `MlrigError` naming `where`.

    Refused: bad UTF-8, syntax errors, integers longer than Python's int-string limit, nesting deeper
    than the recursion limit, documents with more than `max_items` values, and (unless `finite` is
    False, for callers that check numbers field by field) NaN, Infinity and floats beyond the range."""
    import json

    if isinstance(raw, bytes) and _orjson_reads_alike(raw, max_items):
        import orjson

        with contextlib.suppress(orjson.JSONDecodeError):  # what it refuses, the json module explains
            return orjson.loads(raw)
    text = decode_utf8(raw, where) if isinstance(raw, bytes | bytearray) else raw.removeprefix("\ufeff")
    _item_budget(raw, where, max_items)
    odd: list[float] = []  # NaN, Infinity or an overflowing literal met while parsing

    def number(literal: str) -> float:
        v = float(literal)
        if not math.isfinite(v):
            odd.append(v)
        return v

    try:
        with _parse_failures(where, "JSON"):
            data = json.loads(text, parse_float=number, parse_constant=number)
    except json.JSONDecodeError as exc:  # a ValueError, so _parse_failures re-raises it as it is
        raise MlrigError(f"{where} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}; "
                         "fix the syntax") from None
    if finite and odd:  # only then walk the data for the field's path
        _check_finite(data, where)
    return data


def parse_toml(raw: bytes | str, where: str, *, finite: bool = True) -> dict[str, Any]:
    """TOML from bytes (UTF-8) or text; every failure a one-line `MlrigError` naming `where`.

    Refused like `parse_json`: bad UTF-8, syntax errors, integers past the int-string limit, nesting
    past the recursion limit and (unless `finite` is False) `inf`, `nan` and overflowing floats."""
    import tomllib

    text = decode_utf8(raw, where) if isinstance(raw, bytes | bytearray) else raw.removeprefix("\ufeff")
    try:
        with _parse_failures(where, "TOML"):
            data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # a ValueError, so _parse_failures re-raises it as it is
        raise MlrigError(f"{where} is not valid TOML: {_one_line(str(exc), 160)}; fix the syntax") from None
    if finite:
        _check_finite(data, where)
    return data


def load_json(path: str | Path, what: str, *, max_bytes: int, max_items: int = 1_000_000,
              missing: str = "check the path", finite: bool = True) -> Any:
    """Read and parse a user JSON file (see the module docstring for what is refused)."""
    raw = read_bytes(path, what, max_bytes, missing)
    return parse_json(raw, f"{what} {str(path)!r}", max_items=max_items, finite=finite)


def load_toml(path: str | Path, what: str, *, max_bytes: int, missing: str = "check the path",
              finite: bool = True) -> dict[str, Any]:
    """Read and parse a user TOML file (see the module docstring for what is refused)."""
    raw = read_bytes(path, what, max_bytes, missing)
    return parse_toml(raw, f"{what} {str(path)!r}", finite=finite)
