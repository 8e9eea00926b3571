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


def test_psu_fix_is_a_psu_the_model_itself_accepts() -> None:
    """The fix text's PSU (and power limit) pass the same rules that produced the finding."""
    import re

    for gpus, psu in (([{"name": "RTX 3090", "count": 2}], {"watts": 1000, "standard": "ATX 2.x"}),
                      ([{"name": "RTX 4090", "count": 2}], {"watts": 1000, "standard": "ATX 3.1"}),
                      ([{"name": "RTX 5090", "count": 2}], {"watts": 850, "standard": "ATX 3.1"})):
        r = check_build(parse_build(_build(gpus=gpus, psu=psu)))
        bad = next(f for f in r.findings if f.check == "psu" and f.severity in ("error", "warning"))
        watts = float(re.search(r"([\d,]+) W ATX 3\.1", bad.fix).group(1).replace(",", ""))  # type: ignore[union-attr]
        assert watts == r.recommended_psu_w
        fixed = check_build(parse_build(_build(gpus=gpus, psu={"watts": watts, "standard": "ATX 3.1"})))
        assert sev(fixed, "psu") == {"ok"}, fixed.findings
        m = re.search(r"nvidia-smi -pl (\d+)", bad.fix)
        if m:  # the suggested power limit makes the original PSU pass too
            limited = [{**g, "power_limit_w": float(m.group(1))} for g in gpus]
            assert sev(check_build(parse_build(_build(gpus=limited, psu=psu))), "psu") == {"ok"}


def test_seed_two_3090s_on_1000w_need_more_than_1000w_or_a_power_limit() -> None:
    """Seed (osmarks.net): assume ~600 W per RTX 3090. The example build is the user story's."""
    r = check_build(load_build(EXAMPLE.parent / "build-2x3090-1000w-b650.toml"))
    psu = next(f for f in r.findings if f.check == "psu")
    assert psu.severity == "error" and "595 W" in psu.why and r.transient_w > 1000
    assert "1,100 W ATX 3.1" in psu.fix and "nvidia-smi -pl 240" in psu.fix


def test_wall_circuit_and_dual_psu_for_four_gpus() -> None:
    four = _build(gpus=[{"name": "RTX 4090", "count": 4}], psu={"watts": 1600, "standard": "ATX 3.1", "count": 2},
                  ram_gib=256, cpu={"cores": 24, "pcie_lanes": 88, "tdp_w": 350}, motherboard=None)
    r = check_build(parse_build(four))
    assert sev(r, "circuit") == {"warning"} and r.wall_w == pytest.approx((4 * 450 + 350 + 75) / 0.9)
    assert "info" in sev(r, "psu")  # two units: sync them, one unit per card + riser
    # per unit: the board's PSU carries CPU + rest + 2 of the 4 cards = 1,325 W sustained
    assert any(f.check == "psu" and "2 of 4 GPUs" in f.what for f in r.findings)
    assert sev(check_build(parse_build({**four, "circuit": "120V/15A"})), "circuit") == {"error"}
    assert sev(check_build(parse_build({**four, "circuit": "240V/30A"})), "circuit") == {"ok"}
    with pytest.raises(MlrigError, match="circuit"):
        parse_build({**four, "circuit": "lots"})


def test_risers_and_blowers_do_not_raise_false_spacing_or_throttling() -> None:
    # four 3-slot cards 2 positions apart would cover each other in a case - not on risers
    slots = [{"lanes": 16, "position": p} for p in (1, 3, 5, 7)]
    base = _build(gpus=[{"name": "RTX 3090", "count": 4}], psu={"watts": 1600, "standard": "ATX 3.1", "count": 2},
                  ram_gib=256, cpu={"cores": 24, "pcie_lanes": 88, "tdp_w": 350},
                  motherboard={"slots": slots}, cooling={"type": "air"})
    assert "error" in sev(check_build(parse_build(base)), "spacing")
    on_risers = check_build(parse_build({**base, "risers": True, "cooling": {"type": "open-frame"}}))
    assert not sev(on_risers, "spacing") and sev(on_risers, "riser") == {"info"}
    # blower cards (RTX 6000 Ada, catalog form factor "blower") stacked without a gap: no throttle warning
    blowers = _build(gpus=[{"name": "RTX 6000 Ada", "count": 2}], psu={"watts": 1200, "standard": "ATX 3.1"},
                     ram_gib=128, motherboard={"slots": [{"lanes": 8, "position": 1}, {"lanes": 8, "position": 3}]})
    rb = check_build(parse_build(blowers))
    assert not sev(rb, "spacing")
    axial = check_build(parse_build({**blowers, "gpus": [{"name": "RTX 6000 Ada", "count": 2, "cooler": "axial"}]}))
    assert sev(axial, "spacing") == {"warning"}


def test_infinite_or_absurd_build_numbers_are_rejected() -> None:
    for over in ({"ram_gib": float("inf")}, {"ram_gib": float("nan")}, {"psu": {"watts": 1e9}}):
        with pytest.raises(MlrigError):
            parse_build(_build(**over))


def test_cli_build_rejects_inf_ram(tmp_path: Path) -> None:
    bad = tmp_path / "b.toml"
    bad.write_text('ram_gib = inf\n[[gpus]]\nname = "RTX 3090"\n[psu]\nwatts = 800\n'
                   '[cpu]\ncores = 8\npcie_lanes = 24\n')
    res = CliRunner().invoke(app, ["build", "check", str(bad)])
    assert res.exit_code == 2 and "ram_gib" in res.output and "Traceback" not in res.output
