"""The FastAPI application: the JSON API under /api, the pages, the static files, and the safety rules.

Safety (issue 12): the server answers only requests whose Host header names this server (DNS rebinding:
a page elsewhere that points its own name at 127.0.0.1 sends its own name as Host and is refused), refuses
cross-origin POSTs, caps request bodies (`body_cap`), never opens a path it is given (models come from the
catalog or an upload: `service.check_model_name`), and sends nothing anywhere: no CDN, no analytics, no
Hub look-ups unless started with --allow-hub. Pages carry a Content-Security-Policy that allows only this
origin. Every error is JSON (API) or a message on the page, one line naming the input and the fix.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import FastAPI, File, Form, HTTPException, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mlrig import __version__
from mlrig.errors import MlrigError
from mlrig.web import service
from mlrig.web.forms import HERE, error_field, read_upload, upload_arch, validation_error
from mlrig.web.schemas import (
    CompareQuery,
    CompareRow,
    CostQuery,
    CostResponse,
    DiagnoseUpload,
    ErrorResponse,
    FitQuery,
    FitRow,
    GpusQuery,
    ModelsQuery,
    PlanQuery,
    PlanResponse,
    PlanUploadQuery,
    RecommendQuery,
    RecommendResponse,
    ServeQuery,
    ServeResponse,
)

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
MAX_JSON_BODY = 256 * 2**10  # a plan is a few hundred bytes
MAX_UPLOAD_BODY = service.MAX_CONFIG_BYTES + service.MAX_WEIGHTS_HEADER_BYTES + 2**20
MAX_DIAGNOSE_BODY = service.MAX_DIAGNOSE_BYTES + 2**20
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "bad input (one line naming the problem and the fix)"},
    413: {"model": ErrorResponse, "description": "request body too large"},
    422: {"model": ErrorResponse, "description": "a parameter of the wrong type or an unknown parameter"},
}


def body_cap(path: str) -> int:
    """The largest request body a path accepts."""
    if path in ("/api/plan/upload", "/plan"):
        return MAX_UPLOAD_BODY
    if path in ("/api/diagnose", "/diagnose"):
        return MAX_DIAGNOSE_BODY
    return MAX_JSON_BODY


class Guard:
    """Pure ASGI middleware: body caps (Content-Length and streamed bytes), same-origin POSTs, and the
    security headers of every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        cap = body_cap(scope["path"])
        origin = headers.get("origin")
        unsafe = scope["method"] not in ("GET", "HEAD", "OPTIONS")
        if unsafe and origin is not None and urlsplit(origin).netloc.lower() != headers.get("host", "").lower():
            # a form posted from another site (or a sandboxed frame: Origin "null") is refused
            await _json(403, "cross-origin request refused: this server only takes forms from its own pages",
                        None)(scope, receive, send)
            return
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                await _json(400, "Content-Length is not a number", None)(scope, receive, send)
                return
            if int(length) > cap:
                await _json(413, f"request body of {int(length):,} bytes is over this path's {cap:,}-byte limit",
                            None)(scope, receive, send)
                return
        seen = 0

        async def capped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > cap:
                    raise HTTPException(413, f"request body over this path's {cap:,}-byte limit")
            return message

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"),
                         (b"x-frame-options", b"DENY"), (b"content-security-policy", CSP.encode())]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, capped, with_headers)


def _finite(obj: Any) -> Any:
    """NaN/inf become null: JSON has no such numbers (the CLI would print the invalid token `Infinity`)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def json_response(data: Any, status: int = 200) -> Response:
    try:
        body = json.dumps(data, allow_nan=False)
    except ValueError:
        body = json.dumps(_finite(data), allow_nan=False)
    return Response(body, status_code=status, media_type="application/json")


def _json(status: int, error: str, field: str | None) -> Response:
    return json_response({"error": error, "field": field}, status)


def create_app(*, allowed_hosts: list[str] | None = None, allow_hub: bool = False) -> FastAPI:
    """The application. `allowed_hosts`: Host header values accepted (default: the loopback names)."""
    app = FastAPI(title="mlrig", version=__version__, docs_url=None, redoc_url=None,
                  description="Will it fit, how fast, what to buy. Each endpoint returns what the CLI's "
                              "--json prints for the same flags.")
    app.state.allow_hub = allow_hub

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        msg, field = validation_error(list(exc.errors()))
        return _json(422, msg, field)

    @app.exception_handler(MlrigError)
    async def _user_error(request: Request, exc: MlrigError) -> Response:
        return _json(400, str(exc), error_field(exc))

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        return _json(exc.status_code, str(exc.detail), None)

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> Response:  # a bug: say so, no traceback
        return _json(500, f"internal error ({type(exc).__name__}); please report it with the URL", None)

    _api_routes(app)
    from mlrig.web.pages import add_page_routes

    add_page_routes(app)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.add_middleware(Guard)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts or LOCAL_HOSTS))
    return app



def _api_routes(app: FastAPI) -> None:
    hub = bool(app.state.allow_hub)

    @app.get("/api/plan", tags=["plan"], responses={200: {"model": PlanResponse}, **ERRORS})
    def api_plan(q: Annotated[PlanQuery, Query()]) -> Response:
        """`mlrig plan MODEL --gpu G ... --json`: memory, speed, limits for one workload."""
        return json_response(service.plan(q, allow_hub=hub))

    @app.post("/api/plan", tags=["plan"], responses={200: {"model": PlanResponse}, **ERRORS})
    def api_plan_file(plan: dict[str, Any]) -> Response:
        """`mlrig plan --file PLAN.json --json`: a plan in the PLAN-FORMAT.md shape as the JSON body."""
        return json_response(service.plan_body(plan, allow_hub=hub))

    @app.post("/api/plan/upload", tags=["plan"], responses={200: {"model": PlanResponse}, **ERRORS})
    async def api_plan_upload(q: Annotated[PlanUploadQuery, Query()],
                              config: Annotated[UploadFile | None, File(description="config.json")] = None,
                              weights: Annotated[UploadFile | None, File(
                                  description=".gguf or .safetensors (its header is enough)")] = None,
                              weights_size: Annotated[int | None, Form(
                                  description="the whole weights file's size when only its header is sent")] = None,
                              ) -> Response:
        """`mlrig plan FILE --json` for an uploaded config.json, GGUF, or config.json + safetensors header."""
        arch = await upload_arch(config, weights, weights_size)
        return json_response(service.plan_upload(q, arch))

    @app.get("/api/compare", tags=["compare"], responses={200: {"model": list[CompareRow]}, **ERRORS})
    def api_compare(q: Annotated[CompareQuery, Query()]) -> Response:
        """`mlrig compare MODEL --gpu A --gpu B ... --json`."""
        return json_response(service.compare(q, allow_hub=hub))

    @app.get("/api/serve", tags=["serve"], responses={200: {"model": ServeResponse}, **ERRORS})
    def api_serve(q: Annotated[ServeQuery, Query()]) -> Response:
        """`mlrig serve MODEL ... --json`: throughput and per-user speed over concurrency."""
        return json_response(service.serve(q, allow_hub=hub))

    @app.get("/api/recommend", tags=["recommend"], responses={200: {"model": RecommendResponse}, **ERRORS})
    def api_recommend(q: Annotated[RecommendQuery, Query()]) -> Response:
        """`mlrig recommend --model M ... --json`: what to buy or rent."""
        return json_response(service.recommend(q, allow_hub=hub))

    @app.get("/api/cost", tags=["cost"], responses={200: {"model": CostResponse}, **ERRORS})
    def api_cost(q: Annotated[CostQuery, Query()]) -> Response:
        """`mlrig cost ... --json`: buy vs rent."""
        return json_response(service.cost(q))

    @app.get("/api/fit", tags=["fit"], responses={200: {"model": list[FitRow]}, **ERRORS})
    def api_fit(q: Annotated[FitQuery, Query()]) -> Response:
        """`mlrig fit [MODEL] [--gpu G] ... --json`."""
        return json_response(service.fit(q, allow_hub=hub))

    @app.get("/api/gpus", tags=["catalog"], responses={200: {"model": list[dict[str, Any]]}, **ERRORS})
    def api_gpus(q: Annotated[GpusQuery, Query()]) -> Response:
        """`mlrig gpus --json`: the accelerator catalog."""
        return json_response(service.gpus(q))

    @app.get("/api/models", tags=["catalog"], responses={200: {"model": list[dict[str, Any]]}, **ERRORS})
    def api_models(q: Annotated[ModelsQuery, Query()]) -> Response:
        """`mlrig models --json`: the model catalog."""
        return json_response(service.models(q))

    @app.post("/api/diagnose", tags=["diagnose"], responses={200: {"model": DiagnoseUpload}, **ERRORS})
    async def api_diagnose(file: Annotated[UploadFile, File(
            description="timeline.csv from `mlrig diagnose --out DIR`, or its --json report")]) -> Response:
        """A `mlrig diagnose` output, read: the timeline as columns, or the report validated."""
        return json_response(service.parse_diagnose(await read_upload(file, service.MAX_DIAGNOSE_BYTES, "file"),
                                                     file.filename))


__all__ = ["create_app"]
