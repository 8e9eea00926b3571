"""`mlrig web` speed: /api/plan latency (p50, p99) and requests/s, and page first-load time.

Starts `mlrig web` on 127.0.0.1 (a free port) in a child process, so client and server run as they would
for a user, then sends a bounded number of requests (at most --requests, at most --max-seconds) over
one keep-alive connection, and with --clients connections in parallel. Talks to 127.0.0.1 only.
Page first load: the time to fetch /plan with an answer (HTML, CSS, JS) over a fresh connection, and,
when Debian's chromium and Playwright are installed, the browser's own navigation time to the load event.

    python benchmarks/web.py [--requests 400] [--clients 4]

Goal (issue 12): /api/plan p50 under 20 ms on the project's 2-core machine. Last line: `api_plan_p50_ms=<x>`.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

QUERIES = [
    "/api/plan?model=llama-3.1-8b&gpu=RTX%204090&precision=q4_k_m&context=8192",
    "/api/plan?model=qwen2.5-32b&gpu=A100-SXM4-40GB&engine=vllm&gpu_memory_utilization=0.9",
    "/api/plan?model=llama-3.1-70b&gpu=RTX%203090&count=2&precision=q4_k_m&context=8192",
    "/api/plan?model=mistral-7b&gpu=RTX%204090&method=qlora&lora_rank=16&seq_len=4096",
]
PAGE = "/plan?model=llama-3.1-8b&gpu=RTX+4090&precision=q4_k_m&context=8192"
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[bytes]:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "mlrig.cli", "web", "--host", HOST, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"mlrig web exited: {proc.stderr.read().decode() if proc.stderr else ''}") from None
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("mlrig web did not start within 60 s")


def get(conn: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
    conn.request("GET", path, headers={"Host": f"{HOST}:{conn.port}"})
    r = conn.getresponse()
    return r.status, r.read()


def timed_loop(port: int, n: int, max_s: float) -> list[float]:
    """Sequential requests on one keep-alive connection; latencies in seconds."""
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    lat: list[float] = []
    end = time.monotonic() + max_s
    for i in range(n):
        if time.monotonic() > end:
            break
        t0 = time.perf_counter()
        status, _ = get(conn, QUERIES[i % len(QUERIES)])
        lat.append(time.perf_counter() - t0)
        if status != 200:
            raise SystemExit(f"/api/plan answered {status}")
    conn.close()
    return lat


def parallel(port: int, clients: int, n_each: int, max_s: float) -> tuple[int, float]:
    """`clients` connections at once; (requests done, seconds)."""
    done = [0] * clients

    def work(k: int) -> None:
        done[k] = len(timed_loop(port, n_each, max_s))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done), time.perf_counter() - t0


def page_load_http(port: int) -> float:
    """Fresh connection: the answered plan page plus its CSS and JS, in seconds."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    for path in (PAGE, "/static/style.css", "/static/app.js"):
        status, _ = get(conn, path)
        assert status == 200, (path, status)
    conn.close()
    return time.perf_counter() - t0


def page_load_browser(port: int, runs: int = 5) -> list[float] | None:
    """Chromium's navigation time (start to the load event) for the answered plan page, or None."""
    chromium = os.environ.get("MLRIG_CHROMIUM", "/usr/bin/chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path(chromium).exists():
        return None
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    out = []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=flags, headless=True)
        for _ in range(runs):
            ctx = b.new_context(viewport={"width": 1280, "height": 800})
            page = ctx.new_page()
            page.goto(f"http://{HOST}:{port}{PAGE}", wait_until="load", timeout=60_000)
            ms = page.evaluate("() => { const n = performance.getEntriesByType('navigation')[0];"
                               " return n.loadEventEnd - n.startTime; }")
            out.append(float(ms) / 1e3)
            ctx.close()
        b.close()
    return out


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=400, help="sequential /api/plan requests (bounded)")
    ap.add_argument("--clients", type=int, default=4, help="parallel connections for the throughput run")
    ap.add_argument("--max-seconds", type=float, default=60.0, help="time bound of each loop")
    a = ap.parse_args()
    if not 1 <= a.requests <= 10_000 or not 1 <= a.clients <= 16:
        raise SystemExit("--requests must be 1-10000 and --clients 1-16")
    port = free_port()
    proc = start_server(port)
    try:
        timed_loop(port, 20, 30)  # warm-up: imports, catalogs
        lat = timed_loop(port, a.requests, a.max_seconds)
        n_par, s_par = parallel(port, a.clients, max(1, a.requests // a.clients), a.max_seconds)
        first = [page_load_http(port) for _ in range(10)]
        browser = page_load_browser(port)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    ms = [x * 1e3 for x in lat]
    print(f"cpus: {os.cpu_count()}; server: mlrig web on {HOST}:{port} (uvicorn, 1 process)")
    print(f"/api/plan, 1 connection, {len(ms)} requests over {len(QUERIES)} plans: p50 {pct(ms, 0.5):.1f} ms, "
          f"p90 {pct(ms, 0.9):.1f} ms, p99 {pct(ms, 0.99):.1f} ms, mean {statistics.fmean(ms):.1f} ms, "
          f"{len(ms) / sum(lat):.0f} requests/s")
    print(f"/api/plan, {a.clients} connections: {n_par} requests in {s_par:.2f} s = {n_par / s_par:.0f} requests/s")
    print(f"plan page with its answer (HTML + CSS + JS, fresh connection), 10 loads: median "
          f"{statistics.median(first) * 1e3:.0f} ms, max {max(first) * 1e3:.0f} ms")
    if browser is not None:
        print(f"plan page in headless chromium, navigation start to load event, {len(browser)} loads: median "
              f"{statistics.median(browser) * 1e3:.0f} ms, max {max(browser) * 1e3:.0f} ms")
    else:
        print("plan page in a browser: skipped (no chromium or Playwright)")
    print(f"api_plan_p50_ms={pct(ms, 0.5):.1f}")


if __name__ == "__main__":
    main()
