"""Market data: prices to buy and rent hardware and to call hosted models, each with its source and date.

The built-in file is `mlrig/data/prices.toml`. A user file (`$XDG_CONFIG_HOME/mlrig/prices.toml`,
default `~/.config/mlrig/prices.toml`) and any `--prices PATH` files are merged on top, entry by entry
(same section and key: the fields given replace the built-in ones). Every answer lists the files used,
and every price it uses that is older than `assumptions.stale_after_days` (about 6 months) is flagged.

Sections: `platform` (the rest of a GPU machine), `gpu` (one add-in card), `system` (a whole machine
with unified memory: Mac, DGX Spark, Ryzen AI Max), `cloud` (an instance-hour), `api` (a hosted model,
$ per million tokens) and `unpriced` (catalog GPUs deliberately without a price, and why).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mlrig.errors import MlrigError

Verification = Literal["published", "secondary", "estimate", "user"]
BUILTIN_PRICES = Path(__file__).resolve().parent.parent / "data" / "prices.toml"
SECTIONS = ("platform", "gpu", "system", "cloud", "api", "unpriced")
STALE_AFTER_DAYS = 183  # ~6 months: issue 11 asks that older prices be flagged wherever they are used


class _Sourced(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)

    key: str
    source: str
    date: str  # ISO date the price was published or observed ("undated" for a user override without one)
    verification: Verification = "estimate"
    notes: str | None = None
    # names a GPU by the id the catalog is expected to give it; skipped quietly until the catalog has it
    catalog_pending: bool = False

    @field_validator("date")
    @classmethod
    def _iso(cls, v: str) -> str:
        if v != "undated":
            try:
                dt.date.fromisoformat(v)
            except ValueError:
                raise ValueError(f"date must be an ISO date like 2026-11-09, got {v!r}") from None
        return v

    def age_days(self, today: dt.date) -> int | None:
        """Days since the price was observed; None when undated."""
        if self.date == "undated":
            return None
        return (today - dt.date.fromisoformat(self.date)).days


class PlatformPrice(_Sourced):
    """The rest of a GPU machine (CPU, board, RAM, PSU, case or frame) for up to `max_gpus` cards.

    The parts are named so that the build `recommend` proposes is the build it priced.
    """

    price_usd: float = Field(ge=0)
    max_gpus: int = Field(ge=1)
    description: str = ""
    cpu: str = ""
    cpu_cores: int = Field(8, ge=1)
    cpu_pcie_lanes: int = Field(24, ge=1)
    cpu_tdp_w: float = Field(105, ge=0)
    ram_gib: float = Field(32, gt=0)
    psu_w: float = Field(1000, gt=0)
    psu_count: int = Field(1, ge=1, le=4)
    slot_lanes: list[int] = Field(default_factory=lambda: [16])  # electrical width per GPU slot, in use
    frame: Literal["case", "open-frame"] = "case"
    risers: bool = False


class GpuPrice(_Sourced):
    """One add-in card. `gpu` is a catalog name (resolved with mlrig.catalog.gpus.resolve_gpu)."""

    gpu: str
    condition: Literal["new", "used"] = "new"
    price_usd: float = Field(ge=0)
    price_range_usd: list[float] | None = Field(None, min_length=2, max_length=2)
    buyable: bool = True  # False: not sold to individuals (OAM modules, allocation-only parts)


class SystemPrice(_Sourced):
    """A whole machine with unified memory (Mac, DGX Spark, Ryzen AI Max): chip × memory × price."""

    gpu: str
    memory_gib: float = Field(gt=0)
    power_w: float = Field(ge=0)
    idle_w: float = Field(10, ge=0)
    price_usd: float = Field(ge=0)


class CloudPrice(_Sourced):
    """One rentable instance: price per instance-hour (all its GPUs).

    `per_gpu`: pods priced per GPU (RunPod, Vast.ai) rent 1..`max_count` GPUs at `n × on_demand_usd_h`.
    `marketplace`: hosts are third parties; the price is a listing that moves daily.
    """

    provider: str
    instance: str
    region: str | None = None
    gpu: str
    gpu_count: int = Field(1, ge=1)
    on_demand_usd_h: float = Field(ge=0)
    spot_usd_h: float | None = Field(None, ge=0)
    per_gpu: bool = False
    max_count: int = Field(1, ge=1, le=16)
    marketplace: bool = False
    # host RAM that comes with each GPU (offload recipes are checked against it); 128 GiB when the listing
    # gives none (estimate: RunPod's H100 SXM pod lists 125 GB, Lambda's 8x H100 1,800 GiB = 225 per GPU)
    ram_gib_per_gpu: float = Field(128.0, gt=0, le=65536)


class ApiPrice(_Sourced):
    """A hosted open model, $ per million tokens in and out. `model` is a catalog model id, or "*" with a
    parameter range for a provider's size-based price (e.g. Fireworks: 4-16B one price, >16B another)."""

    provider: str
    model: str
    params_min_b: float = Field(0, ge=0)
    params_max_b: float = Field(1e6, gt=0)
    input_usd_per_mtok: float = Field(ge=0)
    output_usd_per_mtok: float = Field(ge=0)


class Unpriced(_Sourced):
    """Catalog GPUs with no buy price on purpose (ids or shell-style patterns) and why."""

    gpus: list[str] = Field(min_length=1)
    reason: str


class Assumptions(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)

    electricity_usd_per_kwh: float = Field(0.18, ge=0)
    electricity_source: str = "estimate"
    electricity_date: str = ""
    pue_home: float = Field(1.0, ge=1.0)
    pue_colo: float = Field(1.4, ge=1.0)
    system_overhead_w: float = Field(120, ge=0)
    idle_gpu_w: float = Field(20, ge=0)
    idle_system_w: float = Field(50, ge=0)
    idle_source: str = "estimate"
    powered_on_hours_per_month: float = Field(730, ge=0, le=730)
    resale_decline_new_per_year: float = Field(0.20, ge=0, le=1)
    resale_decline_used_per_year: float = Field(0.12, ge=0, le=1)
    resale_source: str = "estimate"
    spot_interruption_overhead: float = Field(0.15, ge=0)
    upkeep_fraction_per_year: float = Field(0.03, ge=0)
    psu_usd_per_w: float = Field(0.28, ge=0)
    ram_usd_per_gib: float = Field(10.6, ge=0)
    parts_source: str = "estimate"
    stale_after_days: int = Field(STALE_AFTER_DAYS, ge=1)


class PriceFile(BaseModel):
    path: str
    as_of: str | None = None
    entries: int = 0


Entry = PlatformPrice | GpuPrice | SystemPrice | CloudPrice | ApiPrice | Unpriced


class PriceBook(BaseModel):
    assumptions: Assumptions
    platforms: dict[str, PlatformPrice]
    gpus: dict[str, GpuPrice]
    systems: dict[str, SystemPrice]
    clouds: dict[str, CloudPrice]
    apis: dict[str, ApiPrice] = Field(default_factory=dict)
    unpriced: dict[str, Unpriced] = Field(default_factory=dict)
    files: list[PriceFile]

    def sections(self) -> dict[str, dict[str, Any]]:
        return {"platform": self.platforms, "gpu": self.gpus, "system": self.systems, "cloud": self.clouds,
                "api": self.apis, "unpriced": self.unpriced}

    def entry(self, key: str) -> Entry | None:
        for section in self.sections().values():
            if key in section:
                e: Entry = section[key]
                return e
        return None

    def used_summary(self) -> list[str]:
        """One line per price file: path and as-of date (every answer prints these)."""
        return [f"{f.path} (as of {f.as_of or 'undated'}, {f.entries} entries)" for f in self.files]

    def estimate_keys(self) -> list[str]:
        out: list[str] = []
        for section in (self.platforms, self.gpus, self.systems, self.clouds, self.apis):
            out += [k for k, v in section.items() if v.verification == "estimate"]
        return out

    def stale(self, keys: Sequence[str], today: dt.date) -> list[str]:
        """The keys among `keys` whose price is older than `stale_after_days` (or undated), as
        'key (date, N months old)' lines, oldest first."""
        rows: list[tuple[int, str]] = []
        for k in dict.fromkeys(keys):
            e = self.entry(k)
            if e is None or isinstance(e, Unpriced):
                continue
            age = e.age_days(today)
            if age is None:
                rows.append((10**6, f"{k} (undated)"))
            elif age > self.assumptions.stale_after_days:
                rows.append((age, f"{k} ({e.date}, {age / 30.44:.0f} months old)"))
        return [r for _, r in sorted(rows, reverse=True)]

    def source_line(self, key: str) -> str:
        e = self.entry(key)
        if e is None:
            return f"{key}: not in the price book"
        return f"{key}: {e.source} ({e.date}, {e.verification})"

    def unpriced_reason(self, gpu_id: str) -> str | None:
        for u in self.unpriced.values():
            if any(fnmatch.fnmatchcase(gpu_id, pat) for pat in u.gpus):
                return u.reason
        return None


def user_prices_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mlrig" / "prices.toml"


def _read(path: Path) -> dict[str, Any]:
    """A price file: a regular file of at most 4 MiB, parsed by `mlrig.userfiles` (one-line errors)."""
    from mlrig.userfiles import load_toml

    return load_toml(path, "price file", max_bytes=4 * 2**20, missing="give the path to a prices.toml",
                     finite=False)  # _check_numbers names the field of a NaN or inf


def _check_numbers(path: Path, where: str, table: dict[str, Any]) -> None:
    """Reject negative, NaN and infinite numbers (TOML allows `nan` and `inf`) and integers too large for a
    float (math.isfinite would raise OverflowError on them)."""
    for field, value in table.items():
        if isinstance(value, list):
            for x in value:
                _check_numbers(path, where, {field: x})
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        finite = math.isfinite(value) if isinstance(value, float) else abs(value) < 10**300  # ints past floats
        if not finite or value < 0:
            raise MlrigError(
                f"price file {str(path)!r}: {where}.{field} = {_short(value)} must be a finite number >= 0; "
                "fix the entry"
            )


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_WARNED: set[str] = set()  # user-file warnings already printed by this process (the web app loads prices per request)


def load_prices(
    paths: Sequence[str | Path] | None = None, *, include_user: bool = True, builtin: Path = BUILTIN_PRICES
) -> PriceBook:
    """Load the built-in prices, then the user file (if present), then `paths`, merging by key.

    The user file is optional: one that cannot be read or holds a bad entry is left out with a one-line
    warning on stderr naming it and its problem, and the answer goes on with the other prices (a typo in
    ~/.config/mlrig/prices.toml made `compare`, `recommend` and `cost` exit 2). A file named with --prices was
    asked for, so its faults stay errors."""
    user = user_prices_path()
    explicit = [Path(p) for p in paths or []]
    if not (include_user and user.is_file()):
        return _load_files([builtin, *explicit])
    try:
        return _load_files([builtin, user, *explicit])
    except MlrigError as exc:
        book = _load_files([builtin, *explicit])  # an error here is not the user file's: it propagates
        problem = str(exc).replace(f"price file {str(user)!r}: ", "").replace(f"price file {str(user)!r} ", "")
        problem = problem.removeprefix("is ").rsplit("; fix", 1)[0]  # the fix is said once, below
        message = f"mlrig: warning: ignoring {user} ({problem}); built-in prices used: fix or remove that file"
        if message not in _WARNED:
            _WARNED.add(message)
            import sys

            print(message, file=sys.stderr)
        return book


def _load_files(files: list[Path]) -> PriceBook:
    """The price book of `files` (the built-in file first), merged by key in order."""

    merged: dict[str, dict[str, dict[str, Any]]] = {s: {} for s in SECTIONS}
    assumptions: dict[str, Any] = {}
    used: list[PriceFile] = []
    for i, path in enumerate(files):
        data = _read(path)
        meta = data.get("meta", {}) if isinstance(data.get("meta"), dict) else {}
        as_of = str(meta.get("as_of")) if meta.get("as_of") is not None else None
        count = 0
        if isinstance(data.get("assumptions"), dict):
            _check_numbers(path, "assumptions", data["assumptions"])
            assumptions.update(data["assumptions"])
        for section in SECTIONS:
            entries = data.get(section, {})
            if not isinstance(entries, dict):
                raise MlrigError(f"price file {str(path)!r}: [{section}] must be a table of entries")
            for key, entry in entries.items():
                if not isinstance(entry, dict):
                    raise MlrigError(f"price file {str(path)!r}: {section}.{key} must be a table")
                _check_numbers(path, f"{section}.{key}", entry)
                entry = dict(entry)
                if i > 0 and "source" not in entry:  # an override without its own source
                    entry["source"] = f"{path} (user override)"
                    entry.setdefault("verification", "user")
                    entry.setdefault("date", as_of or "undated")
                if i > 0 and "date" in entry and "verification" not in entry:
                    entry["verification"] = "user"
                merged[section].setdefault(key, {}).update(entry)
                count += 1
        used.append(PriceFile(path=str(path), as_of=as_of, entries=count))

    def build(section: str, model: type[BaseModel]) -> dict[str, Any]:
        out = {}
        for key, entry in merged[section].items():
            try:
                out[key] = model.model_validate({**entry, "key": key})
            except ValidationError as exc:
                err = exc.errors()[0]
                loc = ".".join(str(x) for x in err["loc"])
                raise MlrigError(
                    f"price entry {section}.{key}: {loc}: {err['msg'].removeprefix('Value error, ')}"
                    f" (got {_short(err.get('input'))}); fix it in the price file"
                ) from None
        return out

    try:
        assumptions_model = Assumptions.model_validate(assumptions)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise MlrigError(f"price assumptions: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    return PriceBook(
        assumptions=assumptions_model,
        platforms=build("platform", PlatformPrice),
        gpus=build("gpu", GpuPrice),
        systems=build("system", SystemPrice),
        clouds=build("cloud", CloudPrice),
        apis=build("api", ApiPrice),
        unpriced=build("unpriced", Unpriced),
        files=used,
    )


# ------------------------------------------------------------------------------------ listing, coverage


class PriceRow(BaseModel):
    """One line of `mlrig prices`."""

    section: str
    key: str
    item: str
    price: str
    date: str
    age_days: int | None
    stale: bool
    verification: str
    source: str


def _describe(section: str, e: Any) -> tuple[str, str]:
    if section == "platform":
        return (f"{e.description or e.key} (≤{e.max_gpus} GPUs, {e.ram_gib:g} GiB RAM, "
                f"{e.psu_count}× {e.psu_w:.0f} W)", f"${e.price_usd:,.0f}")
    if section == "gpu":
        rng = f" (${e.price_range_usd[0]:,.0f}-{e.price_range_usd[1]:,.0f})" if e.price_range_usd else ""
        return f"{e.gpu} ({e.condition}{'' if e.buyable else ', not sold retail'})", f"${e.price_usd:,.0f}{rng}"
    if section == "system":
        return f"{e.key} ({e.gpu}, {e.memory_gib:g} GiB unified)", f"${e.price_usd:,.0f}"
    if section == "cloud":
        per = f" per GPU, 1-{e.max_count}" if e.per_gpu else ""
        spot = f", spot ${e.spot_usd_h:,.2f}" if e.spot_usd_h is not None else ""
        return (f"{e.provider} {e.instance} ({e.gpu_count}× {e.gpu}{per})",
                f"${e.on_demand_usd_h:,.2f}/h{spot}")
    if section == "api":
        what = e.model if e.model != "*" else f"any {e.params_min_b:g}-{e.params_max_b:g}B model"
        return (f"{e.provider} {what}",
                f"${e.input_usd_per_mtok:,.3g} in / ${e.output_usd_per_mtok:,.3g} out per Mtok")
    return f"{', '.join(e.gpus)}", f"no price: {e.reason}"


def price_rows(book: PriceBook, today: dt.date, section: str | None = None) -> list[PriceRow]:
    """Every entry with its age; `stale` when older than `stale_after_days` or undated (unpriced: never)."""
    rows = []
    limit = book.assumptions.stale_after_days
    for name, entries in book.sections().items():
        if section is not None and name != section:
            continue
        for key, e in entries.items():
            item, price = _describe(name, e)
            age = e.age_days(today)
            rows.append(PriceRow(
                section=name, key=key, item=item, price=price, date=e.date, age_days=age,
                stale=name != "unpriced" and (age is None or age > limit),
                verification=e.verification, source=e.source))
    return rows


class Coverage(BaseModel):
    """Whether a catalog GPU can be bought through the price book, and if not, why."""

    gpu: str
    status: Literal["priced", "unpriced", "missing"]
    keys: list[str] = Field(default_factory=list)
    reason: str | None = None


def resolved_entries(book: PriceBook, resolve: Callable[[str], Any]) -> dict[str, str]:
    """price key -> catalog GPU id for every gpu/system/cloud entry whose GPU the catalog knows."""
    out: dict[str, str] = {}
    for section in (book.gpus, book.systems, book.clouds):
        for key, e in section.items():
            try:
                out[key] = resolve(e.gpu).id
            except MlrigError:
                continue
    return out


def coverage(book: PriceBook, gpu_ids: Sequence[str], resolve: Callable[[str], Any]) -> list[Coverage]:
    """For every catalog GPU: the buy prices that name it, else the `[unpriced]` reason, else 'missing'."""
    ids = resolved_entries(book, resolve)
    buy = {k for k in (*book.gpus, *book.systems) if book.gpus.get(k) is None or book.gpus[k].buyable}
    out = []
    for gid in gpu_ids:
        keys = sorted(k for k, v in ids.items() if v == gid and k in buy)
        reason = book.unpriced_reason(gid)
        if keys:
            out.append(Coverage(gpu=gid, status="priced", keys=keys))
        elif reason:
            rent = sorted(k for k, v in ids.items() if v == gid and k in book.clouds)
            extra = f" (rent: {', '.join(rent[:3])})" if rent else ""
            out.append(Coverage(gpu=gid, status="unpriced", reason=reason + extra))
        else:
            out.append(Coverage(gpu=gid, status="missing",
                                reason="not in the price book yet: give --price USD or add it with --prices FILE"))
    return out


def card_price(book: PriceBook, gpu_id: str, ids: dict[str, str]) -> GpuPrice | None:
    """The price book's price for one card of catalog GPU `gpu_id` (`compare`'s price column): the new price
    where the book has one, else the used one (the P40 is sold only used); the lowest where several entries
    name the GPU in that condition. Cards not sold retail (`buyable = false`) and GPUs with no `[gpu]` entry
    have none. `ids` is `resolved_entries(book, resolve_gpu)`: GPUs are matched as `recommend` matches them."""
    cards = [p for k, p in book.gpus.items() if ids.get(k) == gpu_id and p.buyable]
    for condition in ("new", "used"):
        same = [p for p in cards if p.condition == condition]
        if same:
            return min(same, key=lambda p: p.price_usd)
    return None
