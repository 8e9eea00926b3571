"""`mlrig web`: the planner in a browser (optional extra `mlrig[web]`: FastAPI, uvicorn, Jinja2).

`create_app()` builds the application; `mlrig web` serves it on 127.0.0.1. See `mlrig.web.app` for the
safety rules and `mlrig.web.service` for how each endpoint reuses the CLI's own JSON builders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI


def create_app(**kwargs: Any) -> FastAPI:
    from mlrig.web.app import create_app as _create

    return _create(**kwargs)


__all__ = ["create_app"]
