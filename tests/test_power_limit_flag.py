"""--power-limit-w: a bad value is one line naming the flag, exit 2, on plan and recommend alike."""

import pytest
from typer.testing import CliRunner

from mlrig.cli import app


@pytest.mark.parametrize("value", ["nan", "-5", "0", "inf", "abc"])
def test_bad_power_limit_is_one_line_naming_the_flag(value: str) -> None:
    for args in (["plan", "llama-3-8b", "--gpu", "RTX 4090"], ["recommend", "--model", "llama-3.1-8b"]):
        res = CliRunner().invoke(app, [*args, "--power-limit-w", value])
        assert res.exit_code == 2
        err = res.output.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("mlrig: error: --power-limit-w: ")
        assert err[0].count("--power-limit-w:") == 1 and "power_limit_w" not in err[0]


def test_power_limit_takes_a_unit() -> None:
    res = CliRunner().invoke(app, ["plan", "llama-3-8b", "--gpu", "RTX 4090", "--power-limit-w", "300W"])
    assert res.exit_code == 0
