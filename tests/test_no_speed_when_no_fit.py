"""`compare` and `fit` show no speed, step time, MFU or time to train for a row that does not fit, only why (its
shortfall), as `plan` shows no speed for a plan that does not fit (issue 10 §3). The result's JSON keeps the
figures (`plan --json` has them too: "speed if it fit"); the tables do not present them as an answer."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from mlrig.cli import app


def _run(*args: str) -> str:
    res = CliRunner().invoke(app, list(args), env={"HF_HUB_OFFLINE": "1", "COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res.stdout


# A 70B full fine-tune: 1,459 GiB per GPU on one RTX 4090 (no fit); LoRA of an 8B on an H100 fits.
ARGS = ("compare", "llama-3.1-70b", "-t", "finetune", "-m", "full", "-g", "RTX 4090", "--tokens", "1B")


def test_compare_table_has_no_training_speed_for_a_row_that_does_not_fit() -> None:
    out = _run(*ARGS)
    row = next(line for line in out.splitlines() if line.strip().startswith("RTX 4090"))
    cells = row.split()
    # tok/s, step s, MFU, hours; then the card's price (it has one), $ per train tok/s (no speed: none), bound
    assert cells[-8:-3] == ["no", "—", "—", "—", "—"] and cells[-3] != "—" and cells[-2:] == ["—", "—"], row
    assert re.search(r"does not fit \(no speed shown\): RTX 4090 \(1,4\d\d\.\d GiB short per GPU\)", " ".join(
        out.split())), out
    data = json.loads(_run(*ARGS, "--json"))
    assert data[0]["result"]["fits"] is False  # the result itself is unchanged: its figures stay in --json
    assert data[0]["result"]["performance"]["train_tokens_per_s"] > 0


def test_compare_markdown_says_why_instead_of_a_speed() -> None:
    out = _run(*ARGS, "--markdown")
    row = next(line for line in out.splitlines() if line.startswith("| RTX 4090"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # speeds, then price (known), $ per train tok/s (no speed: none), bound
    assert cells[3] == "**no**" and cells[4:8] == ["—"] * 4 and cells[8] != "—" and cells[9:11] == ["—"] * 2, row
    assert re.search(r"- RTX 4090: does not fit \(1,4\d\d\.\d GiB short per GPU\)", out), out


def test_a_row_that_fits_keeps_its_speed() -> None:
    out = _run("compare", "llama-3.1-8b", "-t", "finetune", "-m", "lora", "-g", "H100 SXM")
    row = next(line for line in out.splitlines() if line.strip().startswith("H100 SXM"))
    assert "yes" in row and "—" not in row.split("yes")[1].split()[0]
    assert "does not fit" not in out


def test_fit_shows_no_training_speed_for_gpus_it_does_not_fit() -> None:
    out = _run("fit", "llama-3.1-70b", "-t", "finetune", "-m", "full")
    rows = [line for line in out.splitlines() if "✘" in line]
    assert rows and all(line.split()[-1] == "—" for line in rows), rows[:3]
