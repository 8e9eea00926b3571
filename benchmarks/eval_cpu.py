"""`mlrig eval`'s CPU time per line, in process: the chunk path (`mlrig.batch.encoded_chunk`, what each
worker runs) over the first N lines of a file, timed with time.process_time (a loaded machine's wall time
says little), the minimum of R passes after an untimed warm-up chunk.

To compare two versions on a loaded machine, alternate them: `--base DIR` imports mlrig from DIR (a
source tree, e.g. `git archive <commit> | tar -x -C DIR`) instead of the installed one, so

    for i in 1 2 3; do python benchmarks/eval_cpu.py F --base /tmp/base; python benchmarks/eval_cpu.py F; done

gives base and new side by side. The file: `benchmarks/commands.py`'s sweep-like plans (written by
`--write F`), or any eval input (`benchmarks/eval_corpus.py`).

Run: python benchmarks/eval_cpu.py FILE [--lines N] [--repeats R] [--base DIR] [--write]. The LAST line is
`eval_cpu_us_per_line=<N>`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--base", type=Path, help="import mlrig from this source tree")
    ap.add_argument("--write", action="store_true", help="first write FILE: benchmarks/commands.py's plans")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.base:  # ahead of an editable install's finder, which sys.path alone does not outrank
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")
                            and "editable" not in getattr(f, "__name__", "")]
        sys.path.insert(0, str(args.base.resolve()))
    if args.write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from commands import plans

        args.file.write_text("".join(json.dumps(r) + "\n" for r in plans(args.lines)))
    import mlrig
    from mlrig.batch import encoded_chunk, read_chunks

    chunks = []
    with args.file.open("rb") as f:
        for chunk in read_chunks(f):
            chunks.append(chunk)
            if sum(map(len, chunks)) >= args.lines:
                break
    n = sum(map(len, chunks))
    encoded_chunk(chunks[0])  # warm-up: imports, catalogs, memos
    times = []
    for _ in range(args.repeats):
        t = time.process_time()
        for chunk in chunks:
            encoded_chunk(chunk)
        times.append(time.process_time() - t)
    print(f"mlrig from {Path(mlrig.__file__).parent}: {n:,} lines, CPU s per pass {[round(t, 3) for t in times]}")
    print(f"eval_cpu_us_per_line={min(times) / n * 1e6:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
