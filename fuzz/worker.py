"""One fuzzing process for one target: `python fuzz/worker.py TARGET --seconds N --stats FILE --corpus DIR`.

Uses atheris (coverage-guided libFuzzer for Python) when it is installed, with mlrig's modules
instrumented; otherwise a plain mutation loop over the seeds (random byte edits, splices, boundary
integers), which finds less but keeps the harness working anywhere. Either way every execution is
timed here: the stats file (JSON, rewritten about once a second and at the end) holds executions,
crashes (inputs saved under the artifact folder), the slowest input and its time, inputs over 2 s,
and this process's peak RSS.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
SLOW_S = 2.0


class Stats:
    def __init__(self, path: Path, artifacts: Path, target: str, engine: str) -> None:
        self.path, self.artifacts = path, artifacts
        self.d: dict[str, object] = {"target": target, "engine": engine, "execs": 0, "crashes": 0,
                                     "crash_kinds": {}, "slowest_s": 0.0, "slowest_input": None,
                                     "over_2s": 0, "peak_rss_mib": 0.0, "wall_s": 0.0, "done": False}
        self.t0 = time.monotonic()
        self.last_flush = 0.0
        self.slowest = 0.0

    def save_input(self, kind: str, data: bytes) -> str:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        p = self.artifacts / f"{kind}-{hashlib.sha1(data).hexdigest()[:16]}"
        p.write_bytes(data)
        return str(p)

    def flush(self, done: bool = False) -> None:
        self.d["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        self.d["wall_s"] = round(time.monotonic() - self.t0, 1)
        self.d["done"] = done
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.d, indent=1))
        os.replace(tmp, self.path)
        self.last_flush = time.monotonic()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=0, help="stop after this many executions (0: time only)")
    ap.add_argument("--stats", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, required=True, help="working corpus folder (grows)")
    ap.add_argument("--artifacts", type=Path, required=True)
    ap.add_argument("--engine", choices=["auto", "atheris", "random"], default="auto")
    ap.add_argument("--max-len", type=int, default=16384)
    args = ap.parse_args()

    engine = args.engine
    atheris = None
    if engine in ("auto", "atheris"):
        try:
            import atheris  # type: ignore[no-redef]
        except ImportError:
            if engine == "atheris":
                raise
        engine = "atheris" if atheris is not None else "random"

    import targets

    targets.setup()
    if atheris is not None:
        with atheris.instrument_imports(include=["mlrig"]):
            import mlrig.advisor.build
            import mlrig.advisor.prices
            import mlrig.catalog.readers
            import mlrig.planner
            import mlrig.userfiles  # noqa: F401
    from mlrig.errors import MlrigError

    fn = targets.TARGETS[args.target]
    stats = Stats(args.stats, args.artifacts, args.target, engine)
    deadline = time.monotonic() + args.seconds
    seen_kinds: dict[str, int] = stats.d["crash_kinds"]  # type: ignore[assignment]

    def one(data: bytes) -> None:
        t = time.perf_counter()
        try:
            fn(data)
        except MlrigError as exc:
            msg = str(exc)
            if "\n" in msg:  # an error must stay on one line
                _crash("MultiLineError", data, msg)
        except RecursionError as exc:
            _crash("RecursionError", data, repr(exc)[:200])
        except Exception as exc:
            tb = traceback.extract_tb(exc.__traceback__)
            where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
            _crash(f"{type(exc).__name__}@{where}", data, "".join(traceback.format_exception(exc))[-2000:])
        dt = time.perf_counter() - t
        stats.d["execs"] = int(stats.d["execs"]) + 1  # type: ignore[call-overload]
        if dt > stats.slowest:
            stats.slowest = dt
            stats.d["slowest_s"] = round(dt, 4)
            stats.d["slowest_input"] = stats.save_input("slowest", data) if dt > 0.05 else f"{len(data)} bytes"
        if dt > SLOW_S:
            stats.d["over_2s"] = int(stats.d["over_2s"]) + 1  # type: ignore[call-overload]
            stats.save_input("slow", data)
        now = time.monotonic()
        if now - stats.last_flush > 1.0:
            stats.flush()
        if now >= deadline or (args.runs and int(stats.d["execs"]) >= args.runs):  # type: ignore[call-overload]
            stats.flush(done=True)
            targets.cleanup()
            os._exit(0)

    def _crash(kind: str, data: bytes, detail: str) -> None:
        stats.d["crashes"] = int(stats.d["crashes"]) + 1  # type: ignore[call-overload]
        if kind not in seen_kinds:
            path = stats.save_input("crash", data)
            print(f"CRASH {kind} -> {path}\n{detail}", file=sys.stderr, flush=True)
        seen_kinds[kind] = seen_kinds.get(kind, 0) + 1
        stats.flush()

    seeds_dir = targets.SEEDS / args.target
    args.corpus.mkdir(parents=True, exist_ok=True)
    stats.flush()
    if atheris is not None:
        argv = [sys.argv[0], str(args.corpus), str(seeds_dir), f"-max_len={args.max_len}",
                f"-max_total_time={int(args.seconds) + 30}", "-timeout=30", "-rss_limit_mb=3072",
                f"-artifact_prefix={args.artifacts}/", "-print_final_stats=0", "-reload=0"]
        args.artifacts.mkdir(parents=True, exist_ok=True)
        atheris.Setup(argv, one)
        atheris.Fuzz()
    else:
        _random_loop(one, seeds_dir, args.max_len)


_INTERESTING = [b"0", b"-1", b"1e999", b"NaN", b"inf", b"9" * 5000, b"[" * 3000, b"{", b"\xff",
                b"\x00" * 8, b"\xff" * 8, b"\"", b"\\u0000", b"\xef\xbb\xbf", b"true", b"[]", b"{}"]


def _random_loop(one: object, seeds_dir: Path, max_len: int) -> None:
    """Mutation fuzzing without coverage: byte flips, inserts, deletes, splices, interesting tokens."""
    rng = random.Random(0)
    pool = [p.read_bytes() for p in sorted(seeds_dir.iterdir())] or [b""]
    for s in pool:
        one(s)  # type: ignore[operator]
    while True:
        data = bytearray(rng.choice(pool))
        for _ in range(rng.randint(1, 8)):
            op = rng.randrange(6)
            pos = rng.randint(0, len(data))
            if op == 0 and data:
                data[min(pos, len(data) - 1)] = rng.randrange(256)
            elif op == 1:
                data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            elif op == 2 and data:
                del data[pos:pos + rng.randint(1, 32)]
            elif op == 3:
                data[pos:pos] = rng.choice(_INTERESTING)
            elif op == 4:
                other = rng.choice(pool)
                a = rng.randint(0, len(other))
                data[pos:pos] = other[a:a + rng.randint(1, 256)]
            elif data:
                del data[pos:]
        one(bytes(data[:max_len]))  # type: ignore[operator]


if __name__ == "__main__":
    main()
