"""`mlrig probe`, `mlrig diagnose`, `mlrig monitor`: render only; work lives in mlrig.probe / mlrig.diagnose."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer


def _stderr_progress() -> tuple[Any, Any]:
    """A spinner naming the running step, and one permanent line on stderr per finished measurement
    (with its result and how long it took), so a slow probe shows where it is."""
    import time

    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from mlrig.probe.run import DONE

    prog = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)
    task = prog.add_task("probing", total=None)
    started = [time.monotonic()]

    def step(msg: str) -> None:
        if msg.startswith(DONE):
            took = time.monotonic() - started[0]
            prog.console.print(f"[green]✔[/] {escape(msg.removeprefix(DONE))} [dim]({took:.1f} s)[/]")
            return
        if not msg.startswith("disk: "):  # the disk test's phases are one measurement
            started[0] = time.monotonic()
        prog.update(task, description=msg)

    return prog, step


def _render_profile(p: Any) -> None:
    from rich.table import Table

    from mlrig.commands._common import console

    con = console()
    t = Table(title=f"{p.hostname} — probed {p.created_at}", show_header=False)
    c = p.cpu
    caches = ", ".join(f"{k} {v / 2**20:g} MiB" for k, v in
                       (("L2", c.l2_bytes), ("L3", c.l3_bytes)) if v)
    t.add_row("CPU", f"{c.model}: {c.physical_cores or '?'} cores / {c.logical_cpus} threads, {caches}, "
                     f"{c.numa_nodes} NUMA node(s)")
    speed = f"{p.memory.speed_mt_s} MT/s" if p.memory.speed_mt_s else p.memory.speed_source
    t.add_row("RAM", f"{p.memory.total_gib:.1f} GiB; speed: {speed}")
    for g in p.gpus:
        mem = f"{g.memory_total_bytes / 2**30:.1f} GiB" if g.memory_total_bytes else "?"
        cat = g.catalog_id or g.catalog_note or "-"
        t.add_row(f"GPU {g.index}", f"{g.name}, {mem}, driver {g.driver_version or '?'}, CUDA "
                                    f"{g.cuda_version or '?'} → catalog: {cat}")
        if g.measured:
            m = g.measured
            tf = ", ".join(f"{k} {v:g}" for k, v in m.matmul_tflops.items())
            t.add_row("", f"matmul TFLOPS: {tf}; memory {m.memory_bandwidth_gb_s} GB/s; H2D pinned "
                          f"{m.h2d_pinned_gb_s} / pageable {m.h2d_pageable_gb_s} GB/s")
    for d in p.disks:
        t.add_row("Disk", f"{d.device} on {d.mountpoint}: {d.kind}, {d.free_gib:.1f} GiB free")
    if p.stream:
        s = p.stream
        t.add_row("Memory bandwidth", f"copy {s.copy_gb_s} / scale {s.scale_gb_s} / add {s.add_gb_s} / "
                                      f"triad {s.triad_gb_s} GB/s (10^9 B/s; {s.threads} threads, "
                                      f"{s.array_bytes / 2**20:.0f} MiB arrays)")
    if p.matmul:
        t.add_row("CPU matmul", f"{p.matmul.gflops} GFLOP/s ({p.matmul.dtype}, n={p.matmul.n})")
    if p.disk_bench:
        b = p.disk_bench
        t.add_row("Disk bench", f"{b.directory}: write {b.seq_write_mb_s} MB/s, read {b.seq_read_mb_s} MB/s, "
                                f"4 KiB random {b.rand_read_4k_iops:.0f} IOPS "
                                f"({'O_DIRECT' if b.direct_io else 'page cache possible'})")
    con.print(t)
    for n in p.notes + (p.disk_bench.notes if p.disk_bench else []):
        con.print(f"note: {n}", markup=False)


def probe_cmd(
    dir: Path = typer.Option(Path("."), "--dir", help="Directory for the disk test (a temp file, deleted)."),
    quick: bool = typer.Option(False, "--quick", help="Smaller, faster measurements."),
    json_out: bool = typer.Option(False, "--json", help="Print the MachineProfile as JSON."),
    history: bool = typer.Option(False, "--history", help="List past probes instead of probing."),
) -> None:
    """Detect CPU, RAM, GPUs and disks, then measure memory bandwidth, matmul and disk speed."""
    from mlrig.commands._common import print_json
    from mlrig.probe import list_profiles, probe, save_profile

    if history:
        rows = list_profiles()
        if json_out:
            print_json([{"id": i, **p.model_dump(mode="json")} for i, p in rows])
            return
        for i, p in rows:
            tri = f"{p.stream.triad_gb_s} GB/s" if p.stream else "-"
            mm = f"{p.matmul.gflops} GFLOP/s" if p.matmul else "-"
            gp = ", ".join(g.name for g in p.gpus) or "no GPU"
            print(f"#{i} {p.created_at} {p.hostname}: triad {tri}, matmul {mm}, {gp}"
                  f"{' (quick)' if p.quick else ''}")
        if not rows:
            print("no probes saved yet; run `mlrig probe`", file=sys.stderr)
        return
    from mlrig.errors import MlrigError

    if not dir.is_dir():
        raise MlrigError(f"--dir {dir} is not a directory; give an existing directory on the disk to test")
    prog, step = _stderr_progress()
    with prog:
        profile = probe(dir, quick=quick, progress=step)
    try:  # measurements are shown even when they cannot be saved (disk full, unwritable MLRIG_HOME)
        save_profile(profile)
        unsaved = None
    except MlrigError as exc:
        unsaved = exc
    if json_out:
        print_json(profile)
    else:
        _render_profile(profile)
    if unsaved is not None:
        raise MlrigError(f"the measurements above were not saved: {unsaved}")


def diagnose_cmd(
    cmd: list[str] | None = typer.Argument(None, help="The command to run, after `--`."),
    pid: int | None = typer.Option(None, "--pid", help="Attach to a running process instead."),
    interval: float = typer.Option(1.0, "--interval", help="Seconds between samples."),
    duration: float | None = typer.Option(None, "--duration", help="Stop sampling after this many seconds."),
    out: Path | None = typer.Option(None, "--out", help="Write timeline.csv and report.html here."),
    json_out: bool = typer.Option(False, "--json", help="Print findings and summary as JSON."),
) -> None:
    """Run (`-- CMD ARGS`) or attach to (`--pid`) a job, sample it, and name its bottleneck."""
    from mlrig.commands._common import print_json
    from mlrig.diagnose import diagnose

    report = diagnose(list(cmd or []), pid, interval_s=interval, duration_s=duration, out_dir=out)
    if json_out:
        print_json(report)
    else:
        from rich.markup import escape

        con = _err_console()
        for n in report.notes:
            con.print(f"note: {n}", markup=False)
        s = report.summary
        con.print(f"{s.n_samples} samples over {s.duration_s:.1f} s; job CPU {s.tree_cpu_percent_mean:.0f}% of "
                  f"a core, machine CPU {s.cpu_percent_mean:.0f}%, iowait "
                  f"{s.iowait_percent_mean if s.iowait_percent_mean is not None else float('nan'):.0f}%")
        for f in report.findings:
            con.print(f"[bold]{f.kind}[/bold] ({f.severity}): {escape(f.summary)}")
            for r in f.remedies:
                con.print(f"  - {r}", markup=False)
        for path in report.files:
            con.print(f"wrote {path}")
    if report.exit_status:
        raise SystemExit(report.exit_status)


def _err_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def monitor_cmd(
    prometheus: int = typer.Option(..., "--prometheus", help="Port for the /metrics endpoint."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to bind (default loopback only: this machine). For a Prometheus on "
        "another host, bind 0.0.0.0 (every interface) or this machine's address and scrape HOSTNAME:PORT/metrics; "
        "the endpoint has no authentication, so keep it on a trusted network."),
    interval: float = typer.Option(5.0, "--interval", help="Seconds between readings."),
) -> None:
    """Export GPU (DCGM-compatible names) and host metrics for Prometheus.

    It serves this machine's own figures at http://HOST:PORT/metrics; to watch a remote GPU box, run it there
    with --host 0.0.0.0 and point Prometheus (a scrape_configs target HOSTNAME:PORT) or curl at that machine."""
    from mlrig.probe.monitor import run_monitor

    run_monitor(prometheus, host, interval, log=lambda m: print(m, file=sys.stderr))


def register(app: typer.Typer) -> None:
    app.command("probe")(probe_cmd)
    app.command("diagnose", context_settings={"allow_interspersed_args": False})(diagnose_cmd)
    app.command("monitor")(monitor_cmd)
