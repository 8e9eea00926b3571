"""Local SQLite history of probes: $MLRIG_HOME/history.sqlite, else ~/.local/share/mlrig/history.sqlite."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from mlrig.errors import MlrigError
from mlrig.probe.models import MachineProfile


def history_path() -> Path:
    home = os.environ.get("MLRIG_HOME")
    base = Path(home).expanduser() if home else Path.home() / ".local" / "share" / "mlrig"
    return base / "history.sqlite"


def _fail(path: Path, exc: Exception) -> MlrigError:
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return MlrigError(f"probe history {path} is unusable ({why}); it only caches past probes: move it "
                      "aside or set MLRIG_HOME to a writable folder, then run `mlrig probe` again")


@contextmanager
def _connect() -> Iterator[sqlite3.Connection]:
    """A connection to the history database; any SQLite or OS error (corrupt file, disk full, locked,
    read-only) becomes one line naming the file and the fix."""
    path = history_path()
    con: sqlite3.Connection | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(path, timeout=10)
        with con:
            con.execute("CREATE TABLE IF NOT EXISTS probes (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                        "created_at TEXT NOT NULL, hostname TEXT NOT NULL, quick INTEGER NOT NULL, "
                        "json TEXT NOT NULL)")
            yield con
    except (OSError, sqlite3.Error) as exc:
        raise _fail(path, exc) from None
    finally:
        if con is not None:
            con.close()


def _profile(raw: object) -> MachineProfile | None:
    """A stored row's profile, or None when the row is damaged (skipped, not fatal)."""
    if not isinstance(raw, str | bytes):
        return None
    try:
        return MachineProfile.model_validate_json(raw)
    except (ValidationError, ValueError, RecursionError):
        return None


def save_profile(profile: MachineProfile) -> int:
    with _connect() as con:
        cur = con.execute("INSERT INTO probes (created_at, hostname, quick, json) VALUES (?, ?, ?, ?)",
                          (profile.created_at, profile.hostname, int(profile.quick), profile.model_dump_json()))
        return int(cur.lastrowid or 0)


def list_profiles(limit: int = 50) -> list[tuple[int, MachineProfile]]:
    """Most recent first; damaged rows are skipped."""
    if not history_path().exists():
        return []
    with _connect() as con:
        rows = con.execute("SELECT id, json FROM probes ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
    out = []
    for i, raw in rows:
        prof = _profile(raw)
        if prof is not None:
            out.append((int(i), prof))
    return out


def latest_profile(hostname: str | None = None) -> MachineProfile | None:
    """The newest readable saved probe of this host (or of `hostname`), or None if there is none."""
    import socket

    host = hostname or socket.gethostname()
    if not history_path().exists():
        return None
    with _connect() as con:
        rows = con.execute("SELECT json FROM probes WHERE hostname = ? ORDER BY id DESC LIMIT 50",
                           (host,)).fetchall()
    for (raw,) in rows:
        prof = _profile(raw)
        if prof is not None:
            return prof
    return None
