"""`mlrig web` the command: localhost by default, a warning when bound elsewhere, a clear line without the extra."""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


class FakeServer:
    """Stands in for uvicorn.Server: records its config, 'starts' at once, serves nothing."""

    last: FakeServer | None = None

    def __init__(self, config: Any) -> None:
        self.config = config
        self.started = False
        FakeServer.last = self

    def run(self) -> None:
        self.started = True
        time.sleep(0.5)  # long enough for --open's watcher thread to see it


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import uvicorn

    import mlrig.web
    import mlrig.web.service

    seen: dict[str, Any] = {}
    real = mlrig.web.create_app

    def create_app(**kw: Any) -> Any:
        seen.update(kw)
        return real(**kw)

    monkeypatch.setattr(uvicorn, "Server", FakeServer)
    monkeypatch.setattr(mlrig.web, "create_app", create_app)
    monkeypatch.setattr(mlrig.web.service, "sandbox_cwd", lambda: seen.setdefault("sandboxed", True))
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url))
    seen["opened"] = opened
    return seen


def run(*args: str) -> Any:
    from mlrig.cli import app

    return CliRunner().invoke(app, ["web", *args])


def test_localhost_by_default_without_warning(fake: dict[str, Any]) -> None:
    r = run()
    assert r.exit_code == 0, r.output
    assert FakeServer.last is not None and FakeServer.last.config.host == "127.0.0.1"
    assert FakeServer.last.config.port == 8765
    assert "warning" not in r.output and "http://127.0.0.1:8765/" in r.output
    assert fake["allowed_hosts"] == ["127.0.0.1", "localhost", "::1", "[::1]"] and fake["allow_hub"] is False
    assert fake["sandboxed"] is True


def test_bound_elsewhere_warns_and_accepts_that_host(fake: dict[str, Any]) -> None:
    r = run("--host", "192.0.2.7", "--port", "9000", "--allow-host", "box.lan")
    assert r.exit_code == 0, r.output
    assert "warning: listening on 192.0.2.7" in r.output
    assert {"192.0.2.7", "box.lan", "127.0.0.1"} <= set(fake["allowed_hosts"])
    r = run("--host", "0.0.0.0")
    assert "warning" in r.output and "0.0.0.0" not in fake["allowed_hosts"]


def test_open_opens_the_page_once_listening(fake: dict[str, Any]) -> None:
    r = run("--open", "--port", "8799")
    assert r.exit_code == 0, r.output
    deadline = time.monotonic() + 10
    while not fake["opened"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake["opened"] == ["http://127.0.0.1:8799/"]


def test_bad_port_and_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """One-line MlrigErrors (mlrig.cli.main prints them and exits 2)."""
    from mlrig.errors import MlrigError

    r = run("--port", "0")
    assert isinstance(r.exception, MlrigError) and "--port" in str(r.exception)
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if the extra were not installed
    r = run()
    assert isinstance(r.exception, MlrigError) and "pip install 'mlrig[web]'" in str(r.exception)
