"""The pages in a real browser: Debian's chromium, headless, driven by Playwright (never a browser download).

Each test loads a page, fills its form as a person would (typing, choosing, pressing Enter), waits for the
chart, and checks that the numbers on the page are the ones `mlrig ... --json` prints. A screenshot of
every page is saved under pytest's temporary directory (`web-screenshots*`), not in the repository.
Waits are on conditions (an element appearing), with generous time limits for a loaded 2-core machine.
Without chromium or Playwright the tests skip locally; under CI (CI=true) they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("MLRIG_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 90_000
CATALOG = Path(__file__).resolve().parents[1] / "mlrig" / "data" / "models"


def _missing() -> str | None:
    try:
        import fastapi  # noqa: F401
        import playwright.sync_api  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install -e '.[dev]')"
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not found (apt-get install chromium)"
    return None


MISSING = _missing()
if MISSING and not os.environ.get("CI"):
    pytest.skip(MISSING, allow_module_level=True)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    """The app on 127.0.0.1, on a port the OS picks, in a thread of this process."""
    if MISSING:
        pytest.fail(f"browser tests must run in CI: {MISSING}")
    import uvicorn

    from mlrig.web import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the web server did not start within 60 s"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=30)
    sock.close()


@pytest.fixture(scope="module")
def browser(base_url: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True, timeout=TIMEOUT_MS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("web-screenshots")


@pytest.fixture
def page(browser: Any, base_url: str) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=base_url)
    ctx.set_default_timeout(TIMEOUT_MS)
    ctx.set_default_navigation_timeout(TIMEOUT_MS)
    pg = ctx.new_page()
    outside: list[str] = []
    pg.on("request", lambda req: outside.append(req.url) if not req.url.startswith((base_url, "data:")) else None)
    yield pg
    ctx.close()
    assert not outside, f"the page requested something outside this server: {outside}"


def cli_json(*args: str) -> Any:
    from typer.testing import CliRunner

    from mlrig.cli import app

    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


def values(page: Any, selector: str, attr: str = "data-value") -> list[float]:
    return [float(v) for v in page.eval_on_selector_all(selector, f"els => els.map(e => e.getAttribute('{attr}'))")]


def close(a: float, b: float, rel: float = 1e-4) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def test_plan_page(page: Any, shots: Path) -> None:
    page.goto("/plan")
    page.fill("#f-model", "llama-3.1-8b")
    page.fill("#f-gpu", "RTX 4090")
    page.fill("#f-precision", "q4_k_m")
    page.fill("#f-context", "8192")
    page.press("#f-context", "Enter")  # keyboard: Enter submits the form
    page.wait_for_selector('svg[data-chart="stacked-bar"]')
    cli = cli_json("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--precision", "q4_k_m", "--context", "8192")
    mem, perf = cli["memory"], cli["performance"]
    assert close(float(page.get_attribute("#per-gpu-gib", "data-value")), mem["per_gpu_gib"], 1e-9)
    assert "fits" in page.inner_text("#verdict") and cli["fits"]
    # the stacked bar is the breakdown, against the capacity line
    segments = values(page, 'svg[data-chart="stacked-bar"] rect[data-name]')
    assert close(sum(segments), mem["per_gpu_gib"], 1e-3)
    assert close(values(page, 'svg[data-chart="stacked-bar"] line[data-name="capacity"]')[0],
                 mem["gpu_capacity_gib"], 1e-3)
    decode = values(page, '#speed-table tr[data-key="decode_tok_s"] td[data-value]')[0]
    assert close(decode, perf["decode_tok_s"], 1e-9)
    band = page.inner_text('#speed-table tr[data-key="decode_tok_s"]')
    assert f"±{perf['error_band']['decode_tok_s'] * 100:.0f}%" in band
    assert page.locator('svg[data-chart="xy"] circle[data-x]').count() == 2  # prefill and decode on the roofline
    assert "count=" not in page.url  # blank fields stay out of the shared URL
    assert perf["bound"] in page.inner_text("#bound")
    assert int(page.inner_text("#fits-count")) > 0
    # the state is in the URL: reloading it shows the same answer
    assert "model=llama-3.1-8b" in page.url and "context=8192" in page.url
    page.goto(page.url)
    assert close(float(page.get_attribute("#per-gpu-gib", "data-value")), mem["per_gpu_gib"], 1e-9)
    page.screenshot(path=str(shots / "plan.png"), full_page=True)


def test_plan_upload_sends_only_the_gguf_header(page: Any, shots: Path, tmp_path: Path) -> None:
    """A GGUF larger than the upload cap goes through: the page's script sends only its header."""
    pytest.importorskip("gguf")
    from test_model_files import write_gguf

    from mlrig.web.app import MAX_UPLOAD_BODY

    big = tmp_path / "big-vocab.gguf"
    write_gguf(big, vocab=200_000)
    assert big.stat().st_size > MAX_UPLOAD_BODY
    page.goto("/plan")
    page.fill("#f-gpu", "RTX 4090")
    page.set_input_files("#f-weights", str(big))
    page.click("#upload-button")
    page.wait_for_selector("#verdict")
    cli = cli_json("plan", str(big), "--gpu", "RTX 4090")
    assert close(float(page.get_attribute("#per-gpu-gib", "data-value")), cli["memory"]["per_gpu_gib"], 1e-9)
    page.screenshot(path=str(shots / "plan-upload-gguf.png"), full_page=True)


def test_plan_upload_config(page: Any, tmp_path: Path) -> None:
    folder = tmp_path / "Qwen--Qwen2.5-0.5B"
    folder.mkdir()
    shutil.copy(CATALOG / "Qwen--Qwen2.5-0.5B.json", folder / "config.json")
    page.goto("/plan")
    page.fill("#f-gpu", "RTX 3060")
    page.set_input_files("#f-config", str(folder / "config.json"))
    page.click("#upload-button")
    page.wait_for_selector('svg[data-chart="stacked-bar"]')
    cli = cli_json("plan", str(folder / "config.json"), "--gpu", "RTX 3060")
    assert close(float(page.get_attribute("#per-gpu-gib", "data-value")), cli["memory"]["per_gpu_gib"], 1e-9)


def test_compare_page(page: Any, shots: Path) -> None:
    page.goto("/compare")
    page.fill("#f-model", "llama-3.1-8b")
    page.select_option("#f-gpu", ["rtx-4090", "rtx-3090"])
    page.select_option("#f-precision", ["q4_k_m", "bf16"])
    page.click("button[type=submit]")
    page.wait_for_selector('svg[data-chart="bars"]')
    cli = cli_json("compare", "llama-3.1-8b", "--gpu", "rtx-4090", "--gpu", "rtx-3090", "-q", "q4_k_m", "-q", "bf16")
    bars = page.eval_on_selector_all('svg[data-chart="bars"] rect[data-name="speed"]',
                                     "els => els.map(e => [e.dataset.label, e.dataset.value])")
    shown = {label: float(v) for label, v in bars}
    expected = {r["variant"]: r["result"]["performance"]["decode_tok_s"] for r in cli}
    assert shown.keys() == expected.keys() and len(shown) == 4
    assert all(close(shown[k], expected[k]) for k in expected)
    page.screenshot(path=str(shots / "compare.png"), full_page=True)


def test_serve_page(page: Any, shots: Path) -> None:
    page.goto("/serve")
    page.fill("#f-model", "llama-3.1-8b")
    page.fill("#f-gpu", "L40S")
    page.fill("#f-min_tok_s", "20")
    page.press("#f-min_tok_s", "Enter")
    page.wait_for_selector("#max-concurrency")
    cli = cli_json("serve", "llama-3.1-8b", "--gpu", "L40S", "--min-tok-s", "20")
    assert int(page.inner_text("#max-concurrency").replace(",", "")) == cli["max_concurrency"]
    assert page.locator("#serve-table tbody tr").count() == len(cli["curve"])
    # the ± of each row: the decode band at 1 user, the wider TPOT band under load (as the CLI's table)
    wide = max(cli["decode_error_band"], cli["tpot_error_band"])
    assert f"TPOT {wide * 100:.0f}% above" in page.inner_text("#serve-table caption")
    assert page.locator('svg[data-chart="xy"] polyline').count() >= 4
    page.screenshot(path=str(shots / "serve.png"), full_page=True)


def test_serving_setup_on_the_plan_and_serve_pages(page: Any, shots: Path) -> None:
    """The serving-setup inputs (one macro, the CLI's flags: --ep, --eager, --engine-version, ...) on both pages,
    giving what the CLI gives for them; the section opens by itself when a shared URL sets one of them."""
    setup = ["--ep", "2", "--eager", "--engine-version", "0.6.4"]
    for name in ("plan", "serve"):
        page.goto(f"/{name}")
        page.fill("#f-model", "qwen3-30b-a3b")
        page.fill("#f-gpu", "H100 SXM")
        page.fill("#f-count", "2")
        page.click("#setup-fields >> xpath=.. >> summary")  # open "Serving setup"
        page.fill("#f-ep", "2")
        page.fill("#f-engine_version", "0.6.4")
        page.check("#f-eager")
        page.click("button[type=submit]")
        if name == "plan":
            page.wait_for_selector('svg[data-chart="stacked-bar"]')
            cli = cli_json("plan", "qwen3-30b-a3b", "--gpu", "H100 SXM", "-n", "2", *setup)
            decode = values(page, '#speed-table tr[data-key="decode_tok_s"] td[data-value]')[0]
            assert close(decode, cli["performance"]["decode_tok_s"], 1e-9)
            assert "expert parallel 2" in page.content()
        else:
            page.wait_for_selector("#max-concurrency")
            cli = cli_json("serve", "qwen3-30b-a3b", "--gpu", "H100 SXM", "-n", "2", *setup)
            assert int(page.inner_text("#max-concurrency").replace(",", "")) == cli["max_concurrency"]
        assert "eager=true" in page.url and "ep=2" in page.url
        page.goto(page.url)  # the shared URL: the section is open and the inputs keep their values
        assert page.is_visible("#f-ep") and page.input_value("#f-ep") == "2" and page.is_checked("#f-eager")
        page.screenshot(path=str(shots / f"{name}-setup.png"), full_page=True)


def test_recommend_page(page: Any, shots: Path) -> None:
    page.goto("/recommend")
    page.fill("#f-model", "llama-3.1-8b")
    page.fill("#f-precision", "q4_k_m")
    page.fill("#f-min_tok_s", "15")
    page.fill("#f-budget", "4000")
    page.click("button[type=submit]")
    page.wait_for_selector('svg[data-chart="xy"] circle')
    cli = cli_json("recommend", "--model", "llama-3.1-8b", "--precision", "q4_k_m", "--min-tok-s", "15",
                   "--budget", "4000")
    feasible = [o for o in cli["options"] if o["feasible"]]
    first = page.inner_text("#recommend-table tbody tr:first-child td:nth-child(2)")
    assert first.startswith(feasible[0]["name"])
    front = [o for o in feasible if o["pareto"] and o["speed_score"]]
    assert page.locator('svg[data-chart="xy"] circle[data-x][data-name^="Pareto"]').count() == len(front)
    page.screenshot(path=str(shots / "recommend.png"), full_page=True)


def test_cost_page(page: Any, shots: Path) -> None:
    page.goto("/cost")
    page.fill("#f-buy", "RTX 4090")
    page.fill("#f-hours_per_month", "60")
    page.press("#f-hours_per_month", "Enter")
    page.wait_for_selector('svg[data-chart="xy"] polyline')
    cli = cli_json("cost", "--buy", "RTX 4090", "--hours-per-month", "60")
    rows = sorted(cli["comparisons"], key=lambda c: c["cloud"]["cost_per_month_usd"])
    shown = page.eval_on_selector_all('#cost-table td[data-key="break_even"]', "els => els.map(e => e.textContent)")
    assert shown == [f"{h:,.0f}" if (h := c["break_even_hours_per_month"]) is not None else "—" for c in rows]
    assert page.locator('svg[data-chart="xy"] circle[data-x][data-name="break-even"]').count() >= 1
    page.screenshot(path=str(shots / "cost.png"), full_page=True)


def test_diagnose_page(page: Any, shots: Path, tmp_path: Path) -> None:
    from mlrig.diagnose.models import Sample
    from mlrig.diagnose.report import write_csv
    from mlrig.probe.devices import GpuSample
    from mlrig.probe.host import HostSample

    samples = [Sample(t_s=float(t), host=HostSample(cpu_percent_per_core=[20.0 + t, 90.0], ram_used_bytes=2**33,
                                                    disk_read_bytes_s=1e8 * (t % 3)),
                      gpus=[GpuSample(index=0, util_percent=30.0 + t, memory_used_bytes=2**34, temperature_c=60.0,
                                      power_w=200.0)])
               for t in range(30)]
    csv_path = tmp_path / "timeline.csv"
    write_csv(samples, csv_path)
    page.goto("/diagnose")
    page.set_input_files("#f-file", str(csv_path))
    page.click("button[type=submit]")
    page.wait_for_selector('svg[data-chart="xy"]')
    assert "30 samples" in page.inner_text("#timeline-info")
    assert page.locator('svg[data-chart="xy"]').count() >= 4  # %, GiB, MB/s, W, °C, count
    util = page.locator('svg[data-chart="xy"] polyline[data-name="gpu0_util_percent"]')
    assert util.count() == 1
    page.screenshot(path=str(shots / "diagnose.png"), full_page=True)


def test_phone_width_and_no_javascript(browser: Any, base_url: str, shots: Path) -> None:
    """Readable on a phone (nothing wider than the screen) and usable with JavaScript off."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, base_url=base_url, java_script_enabled=False)
    ctx.set_default_timeout(TIMEOUT_MS)
    pg = ctx.new_page()
    pg.goto("/plan")
    pg.fill("#f-model", "qwen2.5-7b")
    pg.fill("#f-gpu", "RTX 3090")
    pg.click("button[type=submit]")
    pg.wait_for_selector('svg[data-chart="stacked-bar"]')
    widths = pg.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    pg.screenshot(path=str(shots / "plan-phone.png"), full_page=True)
    ctx.close()
    assert widths[0] <= widths[1] + 1, f"page is {widths[0]} px wide on a {widths[1]} px screen"


def test_plan_page_lists_fixes_when_it_does_not_fit(page: Any) -> None:
    page.goto("/plan?model=llama-3.1-8b&gpu=RTX+3060+12GB&context=32768")
    page.wait_for_selector("#fixes li")
    items = page.locator("#fixes li").all_inner_texts()
    cli = cli_json("plan", "llama-3.1-8b", "--gpu", "RTX 3060 12GB", "--context", "32768")
    assert len(items) == len(cli["fixes"]) >= 2
    for text, fix in zip(items, cli["fixes"], strict=True):
        assert text.startswith(fix["flags"]) and f"{fix['per_gpu_gib']:.2f}" in text
