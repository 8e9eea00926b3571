"""Test set-up: no network, user config and history kept in a temporary home."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MLRIG_HOME", str(Path(__file__).resolve().parent / ".mlrig-home-unused"))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep user config and history out of the real home directory."""
    monkeypatch.setenv("MLRIG_HOME", str(tmp_path / "mlrig-home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def reference_csv() -> Path:
    """The accelerator reference table the GPU catalog is built from (scripts/data/)."""
    return ROOT / "scripts" / "data" / "accelerators_reference.csv"
