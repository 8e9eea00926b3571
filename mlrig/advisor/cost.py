"""Total cost of ownership, local vs cloud. Pure functions of typed inputs; no I/O.

Conventions: a month is 730 h (8,760 h / 12); `hours_per_month` are busy hours (the job is running).
Local hardware is paid up front, draws its busy power while busy and its idle power for the rest of the
hours it is left on, costs upkeep every month and is sold at the end; cloud is paid per instance-hour,
spot with an interruption overhead. Options are compared doing the same work: each spec's `slowdown`
is its busy hours per busy hour of the reference (set from the planner's speeds by the caller).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

HOURS_PER_MONTH = 8760.0 / 12.0
WEEKS_PER_MONTH = 52.0 / 12.0


class PurchaseItem(BaseModel):
    name: str
    price_usd: float = Field(ge=0)
    annual_decline: float = Field(ge=0, le=1, description="fraction of value lost per year (resale)")


class LocalSpec(BaseModel):
    """A machine you buy.

    `power_w` is the wall draw while busy (GPUs × TDP × utilisation + rest of system, or measured);
    `idle_power_w` while it is on and idle (see prices.toml [assumptions] idle_*).
    """

    model_config = ConfigDict(allow_inf_nan=False)

    name: str
    items: list[PurchaseItem]
    power_w: float = Field(ge=0)
    idle_power_w: float = Field(0.0, ge=0)
    upkeep_fraction_per_year: float = Field(0.03, ge=0)
    slowdown: float = Field(1.0, gt=0, description="busy hours here per busy hour on the reference (cloud) GPU")

    @property
    def upfront_usd(self) -> float:
        return sum(i.price_usd for i in self.items)


class CloudSpec(BaseModel):
    """A rented instance. With `spot`, billed hours grow by `interruption_overhead` (restarts, lost work)."""

    model_config = ConfigDict(allow_inf_nan=False)

    name: str
    usd_per_hour: float = Field(ge=0)
    spot: bool = False
    interruption_overhead: float = Field(0.0, ge=0)
    storage_usd_per_month: float = Field(0.0, ge=0)
    slowdown: float = Field(1.0, gt=0)


class Usage(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)

    hours_per_month: float = Field(ge=0, le=HOURS_PER_MONTH + 1e-6,
                                   description="busy hours on the reference; a month has 730 h")
    years: float = Field(3.0, gt=0, le=20)
    usd_per_kwh: float = Field(0.18, ge=0, le=10)
    pue: float = Field(1.0, ge=1.0, le=5)
    on_hours_per_month: float = Field(HOURS_PER_MONTH, ge=0, le=HOURS_PER_MONTH + 1e-6,
                                      description="hours a local box is powered on (idle power outside busy hours)")


class LocalCost(BaseModel):
    name: str
    upfront_usd: float
    busy_hours_per_month: float
    energy_usd_per_month: float  # busy + idle
    idle_energy_usd_per_month: float = 0.0
    upkeep_usd_per_month: float
    resale_usd: float
    total_usd: float  # over the horizon: upfront + energy + upkeep - resale
    cost_per_month_usd: float
    cost_per_busy_hour_usd: float | None


class CloudCost(BaseModel):
    name: str
    usd_per_hour: float
    billed_hours_per_month: float
    cost_per_month_usd: float
    total_usd: float
    spot: bool


def energy_cost_usd(power_w: float, hours: float, usd_per_kwh: float, pue: float = 1.0) -> float:
    """Electricity: kWh = W × h / 1000, times the tariff and the PUE (facility overhead; 1.0 at home)."""
    return power_w * hours / 1000.0 * usd_per_kwh * pue


def resale_value_usd(price_usd: float, years: float, annual_decline: float) -> float:
    """Declining-balance depreciation: price × (1 − d)^years (see prices.toml [assumptions] for d)."""
    return price_usd * (1.0 - annual_decline) ** years


def idle_hours(usage: Usage, busy_hours: float) -> float:
    """Hours a month the box is on but not busy (never negative)."""
    return max(0.0, usage.on_hours_per_month - busy_hours)


def local_cost(spec: LocalSpec, usage: Usage) -> LocalCost:
    """Own a machine for `usage.years`: upfront + energy (busy, and idle while left on) + upkeep − resale."""
    months = usage.years * 12.0
    busy = usage.hours_per_month * spec.slowdown
    idle = energy_cost_usd(spec.idle_power_w, idle_hours(usage, busy), usage.usd_per_kwh, usage.pue)
    energy = energy_cost_usd(spec.power_w, busy, usage.usd_per_kwh, usage.pue) + idle
    upkeep = spec.upfront_usd * spec.upkeep_fraction_per_year / 12.0
    resale = sum(resale_value_usd(i.price_usd, usage.years, i.annual_decline) for i in spec.items)
    total = spec.upfront_usd + (energy + upkeep) * months - resale
    return LocalCost(
        name=spec.name,
        upfront_usd=spec.upfront_usd,
        busy_hours_per_month=busy,
        energy_usd_per_month=energy,
        idle_energy_usd_per_month=idle,
        upkeep_usd_per_month=upkeep,
        resale_usd=resale,
        total_usd=total,
        cost_per_month_usd=total / months,
        cost_per_busy_hour_usd=(total / months / busy) if busy > 0 else None,
    )


def cloud_cost(spec: CloudSpec, usage: Usage) -> CloudCost:
    """Rent: billed hours = busy hours × slowdown × (1 + interruption overhead if spot); plus storage."""
    billed = usage.hours_per_month * spec.slowdown * (1.0 + (spec.interruption_overhead if spec.spot else 0.0))
    month = billed * spec.usd_per_hour + spec.storage_usd_per_month
    return CloudCost(
        name=spec.name,
        usd_per_hour=spec.usd_per_hour,
        billed_hours_per_month=billed,
        cost_per_month_usd=month,
        total_usd=month * usage.years * 12.0,
        spot=spec.spot,
    )


def break_even_hours_per_month(local: LocalSpec, cloud: CloudSpec, usage: Usage) -> float | None:
    """Busy hours per month (on the reference) above which owning is cheaper than renting.

    Local per month = F + v·h with F = (upfront − resale)/months + upkeep + idle power for all the
    on-hours, and v = busy energy per reference hour minus the idle energy it displaces; cloud per
    month = c·h + storage. Equal at h* = (F − storage) / (c − v). None when renting is cheaper at any
    usage (c ≤ v). A value above 730 h means never within a month (see `never_breaks_even`).
    """
    months = usage.years * 12.0
    resale = sum(resale_value_usd(i.price_usd, usage.years, i.annual_decline) for i in local.items)
    idle_all = energy_cost_usd(local.idle_power_w, usage.on_hours_per_month, usage.usd_per_kwh, usage.pue)
    fixed = (local.upfront_usd - resale) / months + local.upfront_usd * local.upkeep_fraction_per_year / 12.0
    fixed += idle_all
    v = energy_cost_usd(local.power_w - local.idle_power_w, local.slowdown, usage.usd_per_kwh, usage.pue)
    c = cloud.usd_per_hour * cloud.slowdown * (1.0 + (cloud.interruption_overhead if cloud.spot else 0.0))
    if c <= v:
        return None
    return max(0.0, (fixed - cloud.storage_usd_per_month) / (c - v))


def never_breaks_even(hours: float | None) -> bool:
    """Renting stays cheaper at any possible usage: no break-even, or one above the 730 h of a month."""
    return hours is None or hours > HOURS_PER_MONTH


def break_even_text(hours: float | None) -> str:
    """'above 212 busy h/month' or 'never (...)' in words, with the number behind 'never'."""
    if hours is None:
        return "never (renting costs less per hour than the power to run the box)"
    if hours > HOURS_PER_MONTH:
        return f"never (it would take {hours:,.0f} busy h/month; a month has {HOURS_PER_MONTH:.0f})"
    return f"above {hours:,.0f} busy h/month"


def payback_months(local: LocalSpec, cloud: CloudSpec, usage: Usage) -> float | None:
    """Months until the cloud bill saved has paid the purchase (upfront / monthly saving; resale ignored)."""
    lc = local_cost(local, usage)
    saving = cloud_cost(cloud, usage).cost_per_month_usd - (lc.energy_usd_per_month + lc.upkeep_usd_per_month)
    if saving <= 0:
        return None
    return local.upfront_usd / saving


def cost_per_run_usd(usd_per_hour: float, hours_per_run: float) -> float:
    """A fine-tuning run costs its hours × the hourly rate (cloud price, or local cost per busy hour)."""
    return usd_per_hour * hours_per_run


def usd_per_million_tokens(usd_per_hour: float, tokens_per_s: float) -> float | None:
    """$ per 10^6 tokens served = hourly cost / (tokens/s × 3600 / 10^6). None when nothing is served."""
    if tokens_per_s <= 0:
        return None
    return usd_per_hour / (tokens_per_s * 3600.0 / 1e6)


class SensitivityRow(BaseModel):
    hours_per_month: float
    price_factor: float
    local_usd_per_month: float
    cloud_usd_per_month: float
    cheaper: Literal["local", "cloud"]


def sensitivity(
    local: LocalSpec,
    cloud: CloudSpec,
    usage: Usage,
    hours_factors: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0),
    price_factors: tuple[float, ...] = (0.7, 1.0, 1.3),
) -> list[SensitivityRow]:
    """Local vs cloud per month as utilisation and the hardware price move (×factor on both).

    Hours are capped at the 730 h of a month (and at the hours the slower side can fit into it);
    factors that land on the same capped value are listed once."""
    rows = []
    cap = HOURS_PER_MONTH / max(local.slowdown, cloud.slowdown, 1.0)
    hours = sorted({round(min(usage.hours_per_month * hf, cap), 6) for hf in hours_factors})
    for pf in price_factors:
        scaled = local.model_copy(
            update={"items": [i.model_copy(update={"price_usd": i.price_usd * pf}) for i in local.items]}
        )
        for h in hours:
            u = usage.model_copy(update={"hours_per_month": h})
            lc = local_cost(scaled, u).cost_per_month_usd
            cc = cloud_cost(cloud, u).cost_per_month_usd
            rows.append(
                SensitivityRow(
                    hours_per_month=u.hours_per_month,
                    price_factor=pf,
                    local_usd_per_month=lc,
                    cloud_usd_per_month=cc,
                    cheaper="local" if lc < cc else "cloud",
                )
            )
    return rows


class CloudComparison(BaseModel):
    cloud: CloudCost
    slowdown: float = 1.0  # busy hours here per busy hour of the local box
    break_even_hours_per_month: float | None
    break_even_never: bool = False
    payback_months: float | None
    cost_per_run_usd: float | None
    local_cost_per_run_usd: float | None
    sensitivity: list[SensitivityRow]


class TcoResult(BaseModel):
    usage: Usage
    local: LocalCost
    comparisons: list[CloudComparison]
    hours_per_run: float | None = None
    verdict: str
    assumptions: list[str]
    prices_used: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def compare_tco(
    local: LocalSpec, clouds: list[CloudSpec], usage: Usage, hours_per_run: float | None = None
) -> TcoResult:
    """Local vs each cloud option: monthly cost, break-even, payback, cost per run, sensitivity."""
    lc = local_cost(local, usage)
    comps = []
    for cs in clouds:
        cc = cloud_cost(cs, usage)
        run_c = (
            cost_per_run_usd(
                cs.usd_per_hour * cs.slowdown * (1 + (cs.interruption_overhead if cs.spot else 0)),
                hours_per_run,
            )
            if hours_per_run
            else None
        )
        run_l = (
            lc.cost_per_busy_hour_usd * hours_per_run * local.slowdown
            if hours_per_run and lc.cost_per_busy_hour_usd is not None
            else None
        )
        comps.append(
            CloudComparison(
                cloud=cc,
                slowdown=cs.slowdown,
                break_even_hours_per_month=break_even_hours_per_month(local, cs, usage),
                break_even_never=never_breaks_even(break_even_hours_per_month(local, cs, usage)),
                payback_months=payback_months(local, cs, usage),
                cost_per_run_usd=run_c,
                local_cost_per_run_usd=run_l,
                sensitivity=sensitivity(local, cs, usage),
            )
        )
    cheapest = min(comps, key=lambda c: c.cloud.cost_per_month_usd) if comps else None
    too_slow = usage.hours_per_month * local.slowdown > HOURS_PER_MONTH + 1e-6
    if cheapest is None:
        verdict = f"{local.name}: ${lc.cost_per_month_usd:,.0f}/month over {usage.years:g} years"
    else:
        be_txt = "owning pays off " + break_even_text(cheapest.break_even_hours_per_month)
        who = "local" if lc.cost_per_month_usd < cheapest.cloud.cost_per_month_usd else "cloud"
        verdict = (
            f"at {usage.hours_per_month:,.0f} busy h/month, {who} is cheaper: {local.name} "
            f"${lc.cost_per_month_usd:,.0f}/month vs {cheapest.cloud.name} "
            f"${cheapest.cloud.cost_per_month_usd:,.0f}/month; {be_txt}"
        )
    if too_slow:
        verdict = (f"{local.name} would need {usage.hours_per_month * local.slowdown:,.0f} busy h/month for this work;"
                   f" a month has {HOURS_PER_MONTH:.0f} - it cannot keep up. " + verdict)
    assumptions = [
        f"month = {HOURS_PER_MONTH:.0f} h; horizon {usage.years:g} years; electricity"
        f" ${usage.usd_per_kwh:.3f}/kWh,"
        f" PUE {usage.pue:g}",
        f"local draws {local.power_w:,.0f} W while busy and {local.idle_power_w:,.0f} W idle; on"
        f" {usage.on_hours_per_month:,.0f} h/month; upkeep {local.upkeep_fraction_per_year:.0%} of price/year",
        "resale: declining balance " + ", ".join(f"{i.name} -{i.annual_decline:.0%}/yr" for i in local.items),
    ]
    if any(c.spot for c in clouds):
        assumptions.append("spot: billed hours include an interruption overhead (restarts, replayed work)")
    return TcoResult(
        usage=usage,
        local=lc,
        comparisons=comps,
        hours_per_run=hours_per_run,
        verdict=verdict,
        assumptions=assumptions,
    )


# ------------------------------------------------------------------------------- hosted APIs, $ per Mtok


class ApiQuote(BaseModel):
    """What a hosted provider charges for the same open model, per million generated tokens."""

    key: str
    provider: str
    model: str
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    usd_per_mtok_generated: float  # prompt tokens included, at the workload's prompt/output ratio
    date: str
    source: str


def api_usd_per_mtok(input_usd: float, output_usd: float, prompt_tokens: int, output_tokens: int) -> float:
    """$ per 10^6 generated tokens when every reply of `output_tokens` carries a prompt of `prompt_tokens`:
    (prompt × input price + output × output price) / output. A local box's $/Mtok counts only generated
    tokens too (its prompt processing is part of its busy time), so the two compare like for like."""
    out = max(1, output_tokens)
    return (prompt_tokens * input_usd + out * output_usd) / out


def api_quotes(apis: Sequence[Any], model_id: str, params_b: float, prompt_tokens: int,
               output_tokens: int) -> list[ApiQuote]:
    """Quotes for `model_id`: the provider's entry for that model, else its size-based price ("*" entries
    whose parameter range holds `params_b`); cheapest first."""
    exact = {a.provider for a in apis if a.model == model_id}
    quotes = []
    for a in apis:
        if a.model == model_id or (a.model == "*" and a.provider not in exact
                                   and a.params_min_b <= params_b < a.params_max_b):
            quotes.append(ApiQuote(
                key=a.key, provider=a.provider, model=model_id if a.model == "*" else a.model,
                input_usd_per_mtok=a.input_usd_per_mtok, output_usd_per_mtok=a.output_usd_per_mtok,
                usd_per_mtok_generated=api_usd_per_mtok(a.input_usd_per_mtok, a.output_usd_per_mtok,
                                                        prompt_tokens, output_tokens),
                date=a.date, source=a.source))
    return sorted(quotes, key=lambda q: q.usd_per_mtok_generated)
