"""Local SQLite history of probes: $MLRIG_HOME/history.sqlite, else ~/.local/share/mlrig/history.sqlite."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from mlrig.errors import MlrigError
from mlrig.probe.models import MachineProfile


def history_path() -> Path:
    home = os.environ.get("MLRIG_HOME")
    base = Path(home).expanduser() if home else Path.home() / ".local" / "share" / "mlrig"
    return base / "history.sqlite"


def _connect() -> sqlite3.Connection:
    path = history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(path)
    except (OSError, sqlite3.Error) as exc:
        raise MlrigError(f"cannot open probe history {path}: {exc}; set MLRIG_HOME to a writable folder") from exc
    con.execute("CREATE TABLE IF NOT EXISTS probes (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                "created_at TEXT NOT NULL, hostname TEXT NOT NULL, quick INTEGER NOT NULL, json TEXT NOT NULL)")
    return con


def save_profile(profile: MachineProfile) -> int:
    with _connect() as con:
        cur = con.execute("INSERT INTO probes (created_at, hostname, quick, json) VALUES (?, ?, ?, ?)",
                          (profile.created_at, profile.hostname, int(profile.quick), profile.model_dump_json()))
        return int(cur.lastrowid or 0)


def list_profiles(limit: int = 50) -> list[tuple[int, MachineProfile]]:
    """Most recent first."""
    if not history_path().exists():
        return []
    with _connect() as con:
        rows = con.execute("SELECT id, json FROM probes ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
    return [(int(i), MachineProfile.model_validate_json(j)) for i, j in rows]


def latest_profile(hostname: str | None = None) -> MachineProfile | None:
    """The newest saved probe of this host (or of `hostname`), or None if there is none."""
    import socket

    host = hostname or socket.gethostname()
    if not history_path().exists():
        return None
    with _connect() as con:
        row = con.execute("SELECT json FROM probes WHERE hostname = ? ORDER BY id DESC LIMIT 1",
                          (host,)).fetchone()
    return MachineProfile.model_validate_json(row[0]) if row else None
