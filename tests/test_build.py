"""Build checks: PSU transients, RAM, lanes, spacing, NVLink, unknown GPUs; the CLI's exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mlrig.advisor.build import check_build, load_build, parse_build
from mlrig.cli import app
from mlrig.errors import MlrigError

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "build-2x3090.toml"


def _build(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "gpus": [{"name": "RTX 3090", "count": 2}],
        "psu": {"watts": 1000, "standard": "ATX 2.x"},
        "ram_gib": 64,
        "cpu": {"cores": 8, "pcie_lanes": 24, "tdp_w": 120},
        "motherboard": {"slots": [{"lanes": 8, "position": 1}, {"lanes": 8, "position": 4}]},
    }
    base.update(over)
    return base


def sev(report: Any, check: str) -> set[str]:
    return {f.severity for f in report.findings if f.check == check}


def test_two_3090s_on_1000w_atx2_fail_on_transients() -> None:
    r = check_build(parse_build(_build()))
    # sustained 2×350 + 120 + 75 = 895 W fits 1000 W; transients 2×595 + 195 = 1385 W do not
    assert r.sustained_w == pytest.approx(895) and r.transient_w == pytest.approx(1385)
    assert "error" in sev(r, "psu") and not r.ok
    assert sev(r, "ram") == {"ok"}  # 64 GiB ≥ 48 GiB VRAM
    assert "warning" in sev(check_build(parse_build(_build(ram_gib=32))), "ram")


def test_atx3_unit_rides_through_and_example_is_ok() -> None:
    r = check_build(
        parse_build(
            _build(
                psu={"watts": 1200, "standard": "ATX 3.1"},
                ram_gib=128,
                cpu={"cores": 12, "pcie_lanes": 24, "tdp_w": 120},
            )
        )
    )
    assert sev(r, "psu") == {"ok"} and sev(r, "ram") == {"ok"} and sev(r, "cpu") == {"ok"}
    assert check_build(load_build(EXAMPLE)).ok


def test_lanes_spacing_nvlink_case() -> None:
    b = _build(
        gpus=[{"name": "RTX 4090", "count": 2}],
        nvlink=True,
        psu={"watts": 1600, "standard": "ATX 3.1"},
        motherboard={"slots": [{"lanes": 16, "position": 1}, {"lanes": 16, "position": 3}]},
        case={"max_gpu_length_mm": 300, "expansion_slots": 7},
    )
    r = check_build(parse_build(b))
    assert "error" in sev(r, "pcie")  # 32 lanes on a 24-lane CPU
    assert "error" in sev(r, "spacing")  # 3-slot card in slot 1 covers slot 3
    assert "error" in sev(r, "nvlink")  # no NVLink on a 4090
    assert "error" in sev(r, "case")  # 304 mm card, 300 mm case


def test_unknown_gpu_and_bad_fields_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(MlrigError, match="RTX 9999") as e:
        check_build(parse_build(_build(gpus=[{"name": "RTX 9999"}])))
    assert "\n" not in str(e.value)
    with pytest.raises(MlrigError, match="unknown field"):
        parse_build(_build(colour="red"))
    with pytest.raises(MlrigError, match="psu"):
        parse_build({k: v for k, v in _build().items() if k != "psu"})


def test_cli_build_check(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["build", "check", str(EXAMPLE), "--json"])
    assert ok.exit_code == 0, ok.output
    assert '"psu"' in ok.output
    bad = tmp_path / "b.toml"
    bad.write_text('ram_gib = 64\n[[gpus]]\nname = "RTX 9999"\n[psu]\nwatts = 800\n[cpu]\ncores = 8\npcie_lanes = 24\n')
    res = runner.invoke(app, ["build", "check", str(bad)])
    assert res.exit_code == 2
    assert runner.invoke(app, ["build", "check", str(tmp_path / "missing.toml")]).exit_code == 2
