"""Market data: prices to buy and rent hardware, each with its source and date.

The built-in file is `mlrig/data/prices.toml`. A user file (`$XDG_CONFIG_HOME/mlrig/prices.toml`,
default `~/.config/mlrig/prices.toml`) and any `--prices PATH` files are merged on top, entry by entry
(same section and key: the fields given replace the built-in ones). Every answer lists the files used.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from mlrig.errors import MlrigError

Verification = Literal["published", "secondary", "estimate", "user"]
BUILTIN_PRICES = Path(__file__).resolve().parent.parent / "data" / "prices.toml"
SECTIONS = ("platform", "gpu", "system", "cloud")


class _Sourced(BaseModel):
    key: str
    source: str
    date: str  # ISO date the price was published or observed
    verification: Verification = "estimate"
    notes: str | None = None


class PlatformPrice(_Sourced):
    """The rest of a GPU machine (CPU, board, RAM, PSU, case) for up to `max_gpus` cards."""

    price_usd: float = Field(ge=0)
    max_gpus: int = Field(ge=1)
    description: str = ""


class GpuPrice(_Sourced):
    """One add-in card. `gpu` is a catalog name (resolved with mlrig.catalog.gpus.resolve_gpu)."""

    gpu: str
    condition: Literal["new", "used"] = "new"
    price_usd: float = Field(ge=0)
    buyable: bool = True  # False: not sold to individuals (OAM modules, allocation-only parts)


class SystemPrice(_Sourced):
    """A whole machine with unified memory (Mac, DGX Spark): chip × memory × price."""

    gpu: str
    memory_gib: float = Field(gt=0)
    power_w: float = Field(ge=0)
    price_usd: float = Field(ge=0)


class CloudPrice(_Sourced):
    """One rentable instance: price per instance-hour (all its GPUs)."""

    provider: str
    instance: str
    region: str | None = None
    gpu: str
    gpu_count: int = Field(ge=1)
    on_demand_usd_h: float = Field(ge=0)
    spot_usd_h: float | None = Field(None, ge=0)


class Assumptions(BaseModel):
    electricity_usd_per_kwh: float = Field(0.17, ge=0)
    electricity_source: str = "estimate"
    electricity_date: str = ""
    pue_home: float = Field(1.0, ge=1.0)
    pue_colo: float = Field(1.4, ge=1.0)
    system_overhead_w: float = Field(120, ge=0)
    resale_decline_new_per_year: float = Field(0.20, ge=0, le=1)
    resale_decline_used_per_year: float = Field(0.12, ge=0, le=1)
    resale_source: str = "estimate"
    spot_interruption_overhead: float = Field(0.15, ge=0)
    upkeep_fraction_per_year: float = Field(0.03, ge=0)


class PriceFile(BaseModel):
    path: str
    as_of: str | None = None
    entries: int = 0


class PriceBook(BaseModel):
    assumptions: Assumptions
    platforms: dict[str, PlatformPrice]
    gpus: dict[str, GpuPrice]
    systems: dict[str, SystemPrice]
    clouds: dict[str, CloudPrice]
    files: list[PriceFile]

    def used_summary(self) -> list[str]:
        """One line per price file: path and as-of date (every answer prints these)."""
        return [f"{f.path} (as of {f.as_of or 'undated'}, {f.entries} entries)" for f in self.files]

    def estimate_keys(self) -> list[str]:
        out: list[str] = []
        for section in (self.platforms, self.gpus, self.systems, self.clouds):
            out += [k for k, v in section.items() if v.verification == "estimate"]
        return out


def user_prices_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mlrig" / "prices.toml"


def _read(path: Path) -> dict[str, Any]:
    """A price file: a regular file of at most 4 MiB, parsed by `mlrig.userfiles` (one-line errors)."""
    from mlrig.userfiles import load_toml

    return load_toml(path, "price file", max_bytes=4 * 2**20, missing="give the path to a prices.toml",
                     finite=False)  # _check_numbers names the field of a NaN or inf


def _check_numbers(path: Path, where: str, table: dict[str, Any]) -> None:
    """Reject negative, NaN and infinite numbers (TOML allows `nan` and `inf`)."""
    for field, value in table.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not math.isfinite(value) or value < 0:
            raise MlrigError(
                f"price file {str(path)!r}: {where}.{field} = {value} must be a finite number >= 0; fix the entry"
            )


def load_prices(
    paths: Sequence[str | Path] | None = None, *, include_user: bool = True, builtin: Path = BUILTIN_PRICES
) -> PriceBook:
    """Load the built-in prices, then the user file (if present), then `paths`, merging by key."""
    files: list[Path] = [builtin]
    user = user_prices_path()
    if include_user and user.is_file():
        files.append(user)
    files += [Path(p) for p in paths or []]

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
                    f"price entry {section}.{key}: {loc}: {err['msg']}"
                    f" (got {err.get('input')!r}); fix it in the price file"
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
        files=used,
    )
