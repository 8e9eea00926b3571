"""Cost model: hand-checked figures for the seeds' solo researcher, and the price book's rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlrig.advisor.cost import (
    WEEKS_PER_MONTH,
    CloudSpec,
    LocalSpec,
    PurchaseItem,
    Usage,
    break_even_hours_per_month,
    cloud_cost,
    compare_tco,
    local_cost,
    usd_per_million_tokens,
)
from mlrig.advisor.prices import load_prices
from mlrig.errors import MlrigError


def test_solo_researcher_local_vs_cloud_by_hand() -> None:
    """Seed: 2-3 jobs/week of 4-6 h on an A100 → 2.5 × 5 h × 52/12 = 54.2 h/month. Prices are fixed here
    (not read from the book) so the arithmetic is what is tested."""
    hours = 2.5 * 5 * 52 / 12
    cc = cloud_cost(CloudSpec(name="a100", usd_per_hour=1.39), Usage(hours_per_month=hours))
    assert cc.cost_per_month_usd == pytest.approx(54.1667 * 1.39, rel=1e-4)  # ≈ $75.3/month

    gpu, plat, power_w, idle_w = 8000.0, 1225.0, 300 * 0.8 + 120, 70.0
    spec = LocalSpec(
        name="A100 box",
        power_w=power_w,
        idle_power_w=idle_w,
        upkeep_fraction_per_year=0.03,
        items=[
            PurchaseItem(name="a100", price_usd=gpu, annual_decline=0.12),
            PurchaseItem(name="plat", price_usd=plat, annual_decline=0.20),
        ],
    )
    lc = local_cost(spec, Usage(hours_per_month=hours, years=3, usd_per_kwh=0.18))
    resale = gpu * 0.88**3 + plat * 0.80**3
    energy = (power_w * hours + idle_w * (730 - hours)) / 1000 * 0.18  # busy + idle the rest of the month
    upkeep = (gpu + plat) * 0.03 / 12
    by_hand = (gpu + plat - resale) / 36 + energy + upkeep
    assert lc.cost_per_month_usd == pytest.approx(by_hand, rel=1e-9)
    assert lc.idle_energy_usd_per_month == pytest.approx(idle_w * (730 - hours) / 1000 * 0.18)
    assert lc.cost_per_month_usd > cc.cost_per_month_usd  # renting wins at this usage (seed: train infrequently)


def test_idle_power_counts_and_switching_off_saves_it() -> None:
    spec = LocalSpec(name="b", power_w=400, idle_power_w=70,
                     items=[PurchaseItem(name="g", price_usd=1000, annual_decline=0.2)])
    on = local_cost(spec, Usage(hours_per_month=100, usd_per_kwh=0.2))
    off = local_cost(spec, Usage(hours_per_month=100, usd_per_kwh=0.2, on_hours_per_month=100))
    assert on.energy_usd_per_month - off.energy_usd_per_month == pytest.approx(70 * 630 / 1000 * 0.2)
    assert off.idle_energy_usd_per_month == 0


def test_break_even_above_a_month_is_never() -> None:
    from mlrig.advisor.cost import break_even_text, never_breaks_even

    spec = LocalSpec(name="h100", power_w=500, items=[PurchaseItem(name="g", price_usd=30000, annual_decline=0.2)])
    cheap = CloudSpec(name="pod", usd_per_hour=0.5)
    h = break_even_hours_per_month(spec, cheap, Usage(hours_per_month=60))
    assert h is not None and h > 730 and never_breaks_even(h)
    assert break_even_text(h).startswith("never") and "730" in break_even_text(h)
    assert break_even_text(None).startswith("never")
    assert break_even_text(100.0) == "above 100 busy h/month"


def test_sensitivity_hours_are_capped_at_a_month() -> None:
    from mlrig.advisor.cost import sensitivity

    spec = LocalSpec(name="b", power_w=400, items=[PurchaseItem(name="g", price_usd=2000, annual_decline=0.2)])
    rows = sensitivity(spec, CloudSpec(name="c", usd_per_hour=1.0), Usage(hours_per_month=400))
    assert max(r.hours_per_month for r in rows) == pytest.approx(730)
    assert sorted({r.hours_per_month for r in rows}) == [100, 200, 400, 730]  # 800 and 1,600 collapse onto 730


def test_hours_beyond_a_month_are_rejected() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        Usage(hours_per_month=100000)


def test_api_price_per_generated_million_tokens_by_hand() -> None:
    """(prompt × in + output × out) / output: 512 prompt + 128 output tokens at $0.10 in / $0.32 out."""
    from mlrig.advisor.cost import api_quotes, api_usd_per_mtok

    assert api_usd_per_mtok(0.10, 0.32, 512, 128) == pytest.approx((512 * 0.10 + 128 * 0.32) / 128)
    book = load_prices(include_user=False)
    q70 = api_quotes(list(book.apis.values()), "llama-3.1-70b", 70.6, 512, 128)
    assert q70 and q70[0].provider == "DeepInfra" and q70[0].usd_per_mtok_generated == pytest.approx(2.0)
    # a model with no listed price gets the provider's size-based price (Fireworks: > 16B $0.90)
    other = api_quotes(list(book.apis.values()), "qwen2.5-32b", 32.8, 512, 128)
    assert [q.provider for q in other] == ["Fireworks"] and other[0].usd_per_mtok_generated == pytest.approx(4.5)


def test_break_even_is_where_costs_cross() -> None:
    spec = LocalSpec(name="3090", power_w=400, items=[PurchaseItem(name="g", price_usd=1800, annual_decline=0.12)])
    cloud = CloudSpec(name="a100", usd_per_hour=1.5)
    u = Usage(hours_per_month=10, years=3, usd_per_kwh=0.2)
    h = break_even_hours_per_month(spec, cloud, u)
    assert h is not None
    at = u.model_copy(update={"hours_per_month": h})
    assert local_cost(spec, at).cost_per_month_usd == pytest.approx(cloud_cost(cloud, at).cost_per_month_usd)
    assert break_even_hours_per_month(spec, CloudSpec(name="free", usd_per_hour=0.01), u) is None


def test_spot_overhead_and_per_mtok() -> None:
    u = Usage(hours_per_month=100)
    spot = cloud_cost(CloudSpec(name="s", usd_per_hour=1.0, spot=True, interruption_overhead=0.15), u)
    assert spot.billed_hours_per_month == pytest.approx(115)
    assert usd_per_million_tokens(3.6, 1000) == pytest.approx(1.0)  # $3.60/h at 1,000 tok/s = 3.6 Mtok/h
    assert usd_per_million_tokens(1.0, 0) is None


def test_compare_tco_sensitivity_and_verdict() -> None:
    spec = LocalSpec(name="box", power_w=450, items=[PurchaseItem(name="g", price_usd=2800, annual_decline=0.2)])
    res = compare_tco(
        spec, [CloudSpec(name="c", usd_per_hour=2.45)], Usage(hours_per_month=WEEKS_PER_MONTH * 12.5), hours_per_run=5
    )
    comp = res.comparisons[0]
    assert len(comp.sensitivity) == 15
    cheaper = {(r.hours_per_month, r.price_factor): r.cheaper for r in comp.sensitivity}
    assert cheaper[max(cheaper)] == "local"  # 4× the hours at 0.7× price: owning wins
    assert comp.cost_per_run_usd == pytest.approx(2.45 * 5)
    assert "cheaper" in res.verdict


def test_price_overrides_merge_and_reject_bad_numbers(tmp_path: Path) -> None:
    over = tmp_path / "p.toml"
    over.write_text('[meta]\nas_of = "2026-11-01"\n[gpu.rtx-3090-used]\nprice_usd = 650\n')
    book = load_prices([over], include_user=False)
    e = book.gpus["rtx-3090-used"]
    assert e.price_usd == 650 and e.verification == "user" and e.gpu == "rtx-3090"
    assert any(str(over) in line and "2026-11-01" in line for line in book.used_summary())
    for bad in ("-5", "nan", "inf", "1" + "0" * 400):  # an integer past the float range: not OverflowError
        over.write_text(f"[gpu.rtx-3090-used]\nprice_usd = {bad}\n")
        with pytest.raises(MlrigError, match="finite number >= 0"):
            load_prices([over], include_user=False)


def test_user_price_file_is_picked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "cfg"
    (cfg / "mlrig").mkdir(parents=True)
    (cfg / "mlrig" / "prices.toml").write_text("[cloud.runpod-rtx-3090]\non_demand_usd_h = 0.3\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    book = load_prices()
    assert book.clouds["runpod-rtx-3090"].on_demand_usd_h == 0.3
    assert len(book.files) == 2


def test_every_builtin_entry_has_source_and_date_from_2026() -> None:
    """The book was refreshed for issue 11: buy and rent prices dated 2026 with a source, except the few
    kept deliberately (launch prices, labelled and flagged as stale)."""
    import datetime as dt

    book = load_prices(include_user=False)
    old = []
    for section in (book.gpus, book.systems, book.clouds, book.platforms, book.apis, book.unpriced):
        for k, v in section.items():
            assert v.source.strip() and dt.date.fromisoformat(v.date), k
            if v.date < "2026-01-01":
                old.append(k)
    assert set(old) <= {"rtx-6000-ada-new", "rx-9070-xt-new", "radeon-ai-pro-r9700-new", "mac-mini-m4-pro-64gb",
                        "macbook-pro-m4-max-128gb", "jetson-agx-orin-64gb", "aws-g5-xlarge", "aws-g6e-xlarge"}, old


def test_every_catalog_gpu_has_a_price_or_a_reason() -> None:
    """Issue 11: every GPU in the catalog has a buy price, or the price book says why not."""
    from mlrig.advisor.prices import coverage
    from mlrig.catalog.gpus import gpu_ids, resolve_gpu

    cov = coverage(load_prices(include_user=False), gpu_ids(), resolve_gpu)
    missing = [c.gpu for c in cov if c.status == "missing"]
    assert not missing, f"add a [gpu]/[system] price or an [unpriced] reason for: {missing}"
    by = {c.gpu: c for c in cov}
    assert by["rtx-5090"].status == "priced" and by["rtx-pro-6000-blackwell"].status == "priced"
    assert by["h100-sxm-80gb"].status == "unpriced" and "rent" in (by["h100-sxm-80gb"].reason or "")


def test_stale_prices_are_flagged_by_age() -> None:
    import datetime as dt

    book = load_prices(include_user=False)
    e = book.clouds["runpod-h100-sxm"]  # read 2026-11-09
    assert book.stale(["runpod-h100-sxm"], dt.date(2026, 12, 1)) == []
    late = book.stale(["runpod-h100-sxm", "rtx-6000-ada-new"], dt.date(2027, 6, 1))
    assert late[0].startswith("rtx-6000-ada-new") and any(x.startswith("runpod-h100-sxm") for x in late)
    assert e.age_days(dt.date(2026, 11, 19)) == 10


def test_prices_command_lists_ages_and_coverage(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from mlrig.cli import app

    res = CliRunner().invoke(app, ["prices", "--json", "--coverage"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert {"entries", "coverage", "stale_after_days"} <= set(d)
    row = next(r for r in d["entries"] if r["key"] == "rtx-6000-ada-new")
    assert row["stale"] and row["age_days"] > 183
    over = tmp_path / "p.toml"
    import datetime as dt

    over.write_text(f'[gpu.rtx-6000-ada-new]\nprice_usd = 7000\ndate = "{dt.date.today().isoformat()}"\n')
    res = CliRunner().invoke(app, ["prices", "--json", "--stale", "--prices", str(over)])
    assert res.exit_code == 0 and "rtx-6000-ada-new" not in res.output
    assert CliRunner().invoke(app, ["prices", "--section", "nope"]).exit_code == 2
