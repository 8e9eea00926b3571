"""`mlrig eval CASES.jsonl`: one plan per line in, one result per line out (PLAN-FORMAT.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

MAX_LINE_BYTES = 1_000_000


def eval_cmd(
    cases: Annotated[Path, typer.Argument(help="JSON Lines file, one plan per line ('-' for stdin)")],
    out: Annotated[Path | None, typer.Option("--output", "-o", help="write results here instead of stdout")] = None,
) -> None:
    """Evaluate plans in batch (JSON Lines in, one result per line out).

    Bad lines yield an `error` result; the rest are still evaluated.
    Exit status 0 when every line was evaluated, 1 when any had an error."""
    import json
    import sys

    from mlrig.commands._common import round_floats
    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate_case
    from mlrig.results import PlanResult

    if str(cases) == "-":
        lines = sys.stdin
    elif not cases.is_file():
        raise MlrigError(f"cases file {str(cases)!r} not found; give a .jsonl file with one plan per line")
    else:
        lines = cases.open(encoding="utf-8", errors="replace")
    try:
        sink = out.open("w", encoding="utf-8") if out else sys.stdout
    except OSError as exc:
        raise MlrigError(f"cannot write results to {str(out)!r}: {exc.strerror}; pick a writable path") from None
    any_error = False
    try:
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            if len(line) > MAX_LINE_BYTES:
                result = PlanResult(error=f"line {lineno}: over {MAX_LINE_BYTES:,} bytes; a plan is small")
            else:
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    result = PlanResult(error=f"line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})")
                else:
                    result = evaluate_case(obj)
            any_error |= result.error is not None
            sink.write(json.dumps(round_floats(result.model_dump(mode="json"))) + "\n")
            sink.flush()
    finally:
        if out:
            sink.close()
    if any_error:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)
