"""Fuzz every reader of user input with a time budget and report, per target: executions, crashes,
the slowest input, inputs over 2 s and peak RSS.

    python fuzz/run.py --seconds 15                      # every target, 15 s each (CI)
    python fuzz/run.py --seconds 3600 --runs 1000000 --target gguf --json fuzz/last-long-run.json

Targets run one after another, one process each (so a long run uses one core). Exit status 1 when any
target crashed, hung, ran out of memory or had an input over 2 s; 0 otherwise. The working corpus
grows in --workdir (default fuzz/corpus/, git-ignored) so a later run starts where the last stopped;
crashing, slow and slowest inputs are saved under <workdir>/artifacts/<target>/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from targets import TARGETS  # noqa: E402


def run_target(name: str, seconds: float, runs: int, workdir: Path, engine: str) -> dict[str, object]:
    stats_path = workdir / "stats" / f"{name}.json"
    stats_path.parent.mkdir(parents=True, exist_ok=True)
    stats_path.unlink(missing_ok=True)
    log_path = workdir / "logs" / f"{name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(HERE / "worker.py"), name, "--seconds", str(seconds), "--runs", str(runs),
           "--stats", str(stats_path), "--corpus", str(workdir / "corpus" / name),
           "--artifacts", str(workdir / "artifacts" / name), "--engine", engine]
    t0 = time.monotonic()
    with log_path.open("wb") as log:
        # generous wall limit: the worker stops itself at `seconds`; this only catches a wedged process
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=seconds + 120,
                                env={**os.environ, "PYTHONHASHSEED": "0"}).returncode
        except subprocess.TimeoutExpired:
            rc = -9
    wall = time.monotonic() - t0
    try:
        stats: dict[str, object] = json.loads(stats_path.read_text())
    except (OSError, ValueError):
        stats = {"target": name, "execs": 0, "crashes": 0, "slowest_s": 0.0, "over_2s": 0, "peak_rss_mib": 0.0}
    stats["wall_s"] = round(wall, 1)
    stats["exit_status"] = rc
    if rc != 0 or not stats.get("done"):
        # libFuzzer ended the process: a hang past -timeout, memory past -rss_limit_mb, or a hard crash
        tail = log_path.read_bytes()[-600:].decode("utf-8", "replace")
        stats["crashes"] = int(stats.get("crashes", 0)) + 1  # type: ignore[call-overload]
        stats["abnormal_end"] = " ".join(tail.split())[-300:]
    return stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=15.0, help="time budget per target")
    ap.add_argument("--runs", type=int, default=0, help="stop a target after this many executions (0: time only)")
    ap.add_argument("--target", action="append", choices=sorted(TARGETS), help="repeatable; default: all")
    ap.add_argument("--workdir", type=Path, default=HERE / "corpus")
    ap.add_argument("--engine", choices=["auto", "atheris", "random"], default="auto")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()

    names = args.target or list(TARGETS)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    t0 = time.monotonic()
    rows = []
    print(f"{'target':18} {'engine':8} {'execs':>10} {'crashes':>7} {'>2s':>4} {'slowest':>9} "
          f"{'peak RSS':>9} {'wall':>7}")
    for name in names:
        s = run_target(name, args.seconds, args.runs, args.workdir, args.engine)
        rows.append(s)
        print(f"{name:18} {s.get('engine', '?')!s:8} {s['execs']:>10,} {s['crashes']:>7} {s['over_2s']:>4} "
              f"{float(s['slowest_s']):>8.3f}s {float(s['peak_rss_mib']):>6.0f} MiB "  # type: ignore[arg-type]
              f"{float(s['wall_s']):>6.0f}s", flush=True)  # type: ignore[arg-type]
        for kind, n in dict(s.get("crash_kinds") or {}).items():  # type: ignore[call-overload]
            print(f"    crash {kind} x{n}")
        if s.get("abnormal_end"):
            print(f"    ended abnormally (exit {s['exit_status']}): {s['abnormal_end']}")
    total = time.monotonic() - t0
    bad = [r for r in rows if int(r["crashes"]) or int(r["over_2s"])]  # type: ignore[call-overload]
    print(f"{len(rows)} targets, {sum(int(r['execs']) for r in rows):,} executions in {total:.0f} s; "  # type: ignore[call-overload]
          f"{'FAILED: ' + ', '.join(str(r['target']) for r in bad) if bad else 'no crashes, no input over 2 s'}")
    if args.json:
        args.json.write_text(json.dumps({"started": started, "seconds_per_target": args.seconds, "runs": args.runs,
                                         "python": sys.version.split()[0], "wall_s": round(total, 1),
                                         "targets": rows}, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
