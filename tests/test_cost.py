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
    """Seed: 2-3 jobs/week of 4-6 h on an A100 → 2.5 × 5 h × 52/12 = 54.2 h/month."""
    book = load_prices(include_user=False)
    a = book.assumptions
    hours = 2.5 * 5 * 52 / 12
    cloud = book.clouds["runpod-a100-80gb-sxm"]
    cc = cloud_cost(CloudSpec(name="runpod", usd_per_hour=cloud.on_demand_usd_h), Usage(hours_per_month=hours))
    assert cc.cost_per_month_usd == pytest.approx(54.1667 * 2.45, rel=1e-4)  # ≈ $132.7/month

    gpu = book.gpus["a100-80gb-pcie-used"].price_usd  # 12,000
    plat = book.platforms["consumer-1gpu"].price_usd  # 1,000
    power_w = 300 * 0.8 + a.system_overhead_w  # A100 PCIe TDP 300 W
    spec = LocalSpec(
        name="A100 box",
        power_w=power_w,
        upkeep_fraction_per_year=a.upkeep_fraction_per_year,
        items=[
            PurchaseItem(name="a100", price_usd=gpu, annual_decline=a.resale_decline_used_per_year),
            PurchaseItem(name="plat", price_usd=plat, annual_decline=a.resale_decline_new_per_year),
        ],
    )
    lc = local_cost(spec, Usage(hours_per_month=hours, years=3, usd_per_kwh=0.17))
    resale = gpu * 0.88**3 + plat * 0.80**3
    energy = power_w * hours / 1000 * 0.17
    upkeep = (gpu + plat) * 0.03 / 12
    by_hand = (gpu + plat - resale) / 36 + energy + upkeep
    assert lc.cost_per_month_usd == pytest.approx(by_hand, rel=1e-9)
    assert 140 < lc.cost_per_month_usd < 170  # ≈ $155/month: more than renting at this usage
    assert lc.cost_per_month_usd > cc.cost_per_month_usd


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
    for bad in ("-5", "nan", "inf"):
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


def test_every_builtin_entry_has_source_and_date() -> None:
    book = load_prices(include_user=False)
    for section in (book.gpus, book.systems, book.clouds, book.platforms):
        for k, v in section.items():
            assert v.source.strip() and v.date[:4].isdigit(), k
