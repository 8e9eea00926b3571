"""`mlrig compare` answers "is it worth the price?": the card's price from the price book and $ per tok/s beside
the speed ("Is an RTX 6000 Ada worth 4x a 4090 for us? Is a P40 a bargain?")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlrig.cli import app


@pytest.fixture(autouse=True)
def _no_user_prices(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The built-in price book only: a ~/.config/mlrig/prices.toml on the test machine would change the prices."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))


def _invoke(*args: str, columns: int = 80) -> str:
    res = CliRunner().invoke(app, ["compare", "llama-3.1-8b", *args], env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, res.output
    return res.stdout


def test_priced_and_unpriced_gpu_in_json() -> None:
    """A P40 is in the book only used ($300, p40-used); an H100 SXM has no card price (rented, not bought)."""
    rows = json.loads(_invoke("--gpu", "P40", "--gpu", "H100 SXM", "--json"))
    p40, h100 = rows
    price = p40["price"]
    assert (price["key"], price["condition"], price["usd"], price["gpus"]) == ("p40-used", "used", 300, 1)
    assert price["date"] == "2026-05-20" and price["per"] == "decode_tok_s" and price["source"]
    # the value figure, checked by hand: $300 / the row's decode tok/s
    decode = p40["result"]["performance"]["decode_tok_s"]
    assert price["usd_per_tok_s"] == pytest.approx(300 / decode, abs=0.01)
    assert h100["price"] is None


def test_new_price_is_preferred_and_a_count_multiplies_it() -> None:
    """The RTX 4090 has new and used entries: the new one is shown. Two RTX 3090s (used only) cost two cards."""
    from mlrig.advisor.prices import load_prices

    book = load_prices(include_user=False)
    rows = json.loads(_invoke("--gpu", "RTX 4090", "--gpu", "2x RTX 3090", "--json"))
    one, two = (r["price"] for r in rows)
    assert one["key"] == "rtx-4090-new" and one["usd"] == book.gpus["rtx-4090-new"].price_usd
    card = book.gpus["rtx-3090-used"].price_usd
    assert two["condition"] == "used" and two["gpus"] == 2 and two["usd"] == 2 * card
    decode = rows[1]["result"]["performance"]["decode_tok_s"]
    assert two["usd_per_tok_s"] == pytest.approx(2 * card / decode, abs=0.01)


def test_terminal_table_at_80_columns_shows_price_value_and_footnote() -> None:
    out = _invoke("--gpu", "RTX 6000 Ada", "--gpu", "4090", "--gpu", "P40", "--gpu", "H100 SXM")
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80, out
    assert "decode" in out and "$ per" in out
    assert "6,800" in out and "300u" in out  # RTX 6000 Ada new; the P40 used, marked
    h100 = next(line for line in out.splitlines() if line.startswith(" H100 SXM") or line.startswith("H100 SXM"))
    assert h100.rstrip().endswith("—"), h100  # no price: a dash in the value column
    flat = " ".join(out.split())
    assert "`mlrig prices`" in flat and "2024-02-25" in flat and "months old" in flat


def test_training_value_is_per_training_token_per_second() -> None:
    rows = json.loads(_invoke("--gpu", "RTX 4090", "--method", "qlora", "--json"))
    price, perf = rows[0]["price"], rows[0]["result"]["performance"]
    assert price["per"] == "train_tokens_per_s"
    assert price["usd_per_tok_s"] == pytest.approx(price["usd"] / perf["train_tokens_per_s"], abs=0.01)
    assert "train" in _invoke("--gpu", "RTX 4090", "--method", "qlora").split("$ per")[1][:40]


def test_markdown_carries_price_date_and_source_id() -> None:
    md = _invoke("--gpu", "P40", "--gpu", "H100 SXM", "--markdown")
    assert "| price $ (u = used) | $ per decode tok/s |" in md
    assert "300u" in md and "p40-used (2026-05-20)" in md and "`mlrig prices`" in md


def test_no_priced_gpu_says_so() -> None:
    out = _invoke("--gpu", "H100 SXM", "--gpu", "A100 80GB SXM")
    assert "$ per" not in out and "none of these GPUs has a card price" in " ".join(out.split())


def test_web_compare_page_shows_the_price_columns() -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from mlrig.web import create_app

    page = TestClient(create_app(), base_url="http://127.0.0.1:8765").get(
        "/compare", params=[("model", "llama-3.1-8b"), ("gpu", "P40"), ("gpu", "H100 SXM")])
    assert page.status_code == 200
    assert "$ per decode tok/s" in page.text and 'title="p40-used, 2026-05-20">300 (used)' in page.text


def test_prices_file_overrides_the_book(tmp_path: Path) -> None:
    """`--prices FILE` merges by key as in `recommend`: a P40 found for $150 halves its $ per tok/s."""
    f = tmp_path / "p.toml"
    f.write_text('[gpu.p40-used]\nprice_usd = 150\ndate = "2026-11-20"\n')
    row = json.loads(_invoke("--gpu", "P40", "--prices", str(f), "--json"))[0]
    assert row["price"]["usd"] == 150 and row["price"]["date"] == "2026-11-20"
    assert row["price"]["usd_per_tok_s"] == pytest.approx(150 / row["result"]["performance"]["decode_tok_s"], abs=0.01)
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "mlrig.cli", "compare", "llama-3.1-8b", "--gpu", "P40", "--prices",
                          str(tmp_path / "no.toml")], capture_output=True, text=True, timeout=240)
    assert res.returncode == 2 and "not found" in res.stderr and "Traceback" not in res.stderr, res.stderr
