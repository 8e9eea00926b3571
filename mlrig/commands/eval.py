"""`mlrig eval CASES.jsonl`: one plan per line in, one result per line out (PLAN-FORMAT.md).

The per-line work and its guarantees live in `mlrig.batch`; this command opens the input and output,
refuses an output that is the input, and reports a batch cut short by a signal."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Annotated

import typer


def _open_cases(cases: Path) -> IO[bytes]:
    """The cases file as a binary stream: a regular file, or a pipe (`<(...)`, a FIFO) read as it comes."""
    import os
    import stat

    from mlrig.errors import MlrigError
    from mlrig.userfiles import check_regular_file

    try:
        st = os.stat(cases)
    except (OSError, ValueError):
        st = None
    if st is not None and stat.S_ISFIFO(st.st_mode):
        try:
            return open(cases, "rb")  # closed by the caller
        except OSError as exc:
            raise MlrigError(f"cannot read cases file {str(cases)!r}: {exc.strerror}") from None
    check_regular_file(cases, "cases file", "give a .jsonl file with one plan per line ('-' for stdin)")
    from mlrig.userfiles import open_regular

    fd, _ = open_regular(cases, "cases file")
    return os.fdopen(fd, "rb", buffering=2**20)  # large reads: an over-long line is skipped quickly


def _refuse_same_file(source: IO[bytes], out: Path | int) -> None:
    """An output (`-o` path, or standard output's descriptor) that is the input itself, directly, through
    a symlink or a hard link, is refused: `-o` would empty it before it is read, and `>> cases.jsonl`
    would feed the results back in without end. Compared by device and inode."""
    import os
    import stat

    from mlrig.errors import MlrigError

    try:
        so = os.fstat(out) if isinstance(out, int) else os.stat(out)
        si = os.fstat(source.fileno())
    except (OSError, ValueError, AttributeError):
        return  # the output does not exist yet (or has no descriptor): nothing to clobber
    if (so.st_dev, so.st_ino) == (si.st_dev, si.st_ino) and stat.S_ISREG(si.st_mode):
        if isinstance(out, int):
            raise MlrigError("standard output is the cases file itself; appending results there would feed "
                             "them back in as cases; pick another output path")
        raise MlrigError(f"--output {str(out)!r} is the cases file itself; writing there would empty it "
                         "before it is read; pick another output path")


def eval_cmd(
    cases: Annotated[Path, typer.Argument(
        help="JSON Lines file, one plan per line ('-' for stdin); a .toml plan file is one plan")],
    out: Annotated[Path | None, typer.Option("--output", "-o", help="write results here instead of stdout")] = None,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", min=1, help="worker processes for a cases file of more than 1,024 lines "
        "(default: the CPUs, at most 8; 1 = none). Input from a pipe is evaluated as it comes, here")] = None,
) -> None:
    """Evaluate plans in batch (JSON Lines in, one result per line out, line N for line N).

    A bad or blank line yields an `error` result on its line; the rest are still evaluated; `id` is
    echoed as given. Exit status 0 when every line was evaluated, 1 when any had an error, 128+N when
    signal N stopped the batch (a summary on stderr; every line written is complete)."""
    import os
    import sys

    from mlrig import interrupts
    from mlrig.batch import ChunkPool, LineSink, count_lines, default_jobs, is_regular_file, read_chunks, signals_held
    from mlrig.errors import MlrigError

    source: IO[bytes] = sys.stdin.buffer if str(cases) == "-" else _open_cases(cases)
    if cases.suffix.lower() == ".toml":
        # a TOML plan file (`plan --file`'s, examples/plan.toml) is one plan: one line, evaluated as JSON Lines
        # would be (its lines read as JSON had given one 'not valid JSON' result per line)
        import io
        import json

        from mlrig.planner import load_plan_file

        source.close()
        source = io.BytesIO(json.dumps(load_plan_file(cases)).encode() + b"\n")
    try:
        if out is not None:
            _refuse_same_file(source, out)
            try:
                sink = LineSink(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666), None, str(out),
                                close=True)
            except OSError as exc:
                raise MlrigError(f"cannot write results to {str(out)!r}: {exc.strerror}; "
                                 "pick a writable path") from None
        else:
            sys.stdout.flush()
            try:
                fd = sys.stdout.fileno()
            except (AttributeError, OSError, ValueError):
                fd = None
            if fd is not None:
                _refuse_same_file(source, fd)
            try:
                sink = LineSink(sys.stdout.fileno(), None, "stdout", close=False)
            except (AttributeError, OSError, ValueError):  # captured stdout without a descriptor
                sink = LineSink(None, sys.stdout.buffer, "stdout", close=False)
        any_error = False
        if not is_regular_file(source):
            jobs = 1  # a pipe's plans are answered as they come (read_chunks), never queued behind workers
        try:
            with ChunkPool(jobs or default_jobs()) as pool:
                for lines, chunk_error in pool.map(read_chunks(source)):
                    any_error |= chunk_error
                    try:
                        sink.write_encoded(lines)
                    except OSError as exc:
                        if isinstance(exc, BrokenPipeError):
                            raise
                        raise MlrigError(f"cannot write results to {sink.name}: {exc.strerror or exc} after "
                                         f"{sink.lines:,} lines (each one complete); free some space or write "
                                         "elsewhere") from None
        except interrupts.STOP as exc:
            with signals_held():
                sink.close()
                done = sink.lines  # lines read past `done` were not evaluated (or not written) yet
                total = count_lines(source)  # the whole input: exact even mid-read
                left = None if total is None else total - done
                of = f"{done:,} of {total:,}" if total is not None else f"{done:,}"
                rest = "" if left is not None else " (the rest of the input was not read)"
                where = f" in {str(out)!r}" if out is not None else ""
                print(f"mlrig: eval stopped by {interrupts.describe(exc)}: {of} lines evaluated{rest}; "
                      f"the {done:,} results{where} are complete lines; run the remaining lines again",
                      file=sys.stderr)
            raise typer.Exit(interrupts.exit_status(exc)) from None
        finally:
            sink.close()
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    if any_error:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)
