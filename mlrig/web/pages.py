"""The HTML pages: one form each (GET, so the URL holds the state and can be shared), the answer as
tables, and a chart drawn on the server (`charts`). No JavaScript is needed; `static/app.js` only
leaves blank fields out of shared URLs and trims a large model file to its header before uploading it."""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ValidationError
from starlette.datastructures import UploadFile as StarletteUpload
from starlette.templating import Jinja2Templates

from mlrig.errors import MlrigError
from mlrig.estimators.engines import ENGINE_NAMES
from mlrig.units import MB, read_rate_text
from mlrig.web import charts, service, views
from mlrig.web.forms import HERE, error_field, read_upload, upload_arch, validation_error
from mlrig.web.schemas import (
    CompareQuery,
    CostQuery,
    PlanQuery,
    PlanUploadQuery,
    RecommendQuery,
    ServeQuery,
)

PAGES = [("plan", "Plan", "Will it fit, how fast, and what bounds it"),
         ("compare", "Compare", "GPUs, precisions and engines side by side"),
         ("serve", "Serve", "Users served at a per-user speed"),
         ("recommend", "Recommend", "What to buy or rent"),
         ("cost", "Cost", "Buy vs rent over usage"),
         ("diagnose", "Diagnose", "A `mlrig diagnose` report, opened")]
ENGINES = [e.strip() for e in ENGINE_NAMES.split(",")]  # the engines the planner names in its errors
PRECISIONS = ["bf16", "fp16", "fp8", "int8", "int4", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "q3_k_m", "q2_k",
              "nf4", "awq", "gptq", "mxfp4"]
MEMORY_PARTS = [("weights", "weights_gib"), ("KV cache", "kv_cache_gib"), ("activations", "activations_gib"),
                ("gradients", "gradients_gib"), ("optimizer", "optimizer_gib"), ("overhead", "overhead_gib")]
SPEED_ROWS = [("prefill", "prefill_tok_s", "tok/s"), ("time to first token", "ttft_ms", "ms"),
              ("decode, per sequence", "decode_tok_s", "tok/s"), ("time per output token", "tpot_ms", "ms"),
              ("throughput", "throughput_tok_s", "tok/s"), ("training", "train_tokens_per_s", "tokens/s"),
              ("step time", "step_time_s", "s")]


def fmt(x: Any, digits: int = 1) -> str:
    """A figure for a table: thousands separators, a dash for None (as the CLI's fmt_num)."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if not math.isfinite(x):
            return "—"
        return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.{digits}f}"
    return str(x)


def describe(v: Any) -> str:
    """Any JSON value in one line (the validation object is rendered this way, whatever its fields)."""
    if isinstance(v, dict):
        return "; ".join(f"{k}: {describe(x)}" for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(describe(x) for x in v)
    if isinstance(v, float):
        return f"{v:.3g}"
    return fmt(v)


templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.filters["num"] = fmt
templates.env.filters["describe"] = describe
templates.env.filters["mb_s"] = lambda mb_s: read_rate_text(float(mb_s) * MB)  # "43.5 kB/s", not "0.04 MB/s"
templates.env.globals["pages"] = PAGES


def form_values(request: Request, lists: tuple[str, ...] = ()) -> dict[str, Any]:
    """The query string as a dict: empty fields dropped (a blank box means 'the default'), list fields kept
    as lists."""
    qp = request.query_params
    out: dict[str, Any] = {}
    for key in qp:
        if key in lists:
            vals = [v for v in qp.getlist(key) if v.strip()]
            if vals:
                out[key] = vals
        elif qp[key].strip():
            out[key] = qp[key]
    return out


def parse(model: type[BaseModel], values: dict[str, Any]) -> tuple[Any, str | None, str | None]:
    try:
        return model.model_validate(values), None, None
    except ValidationError as exc:
        msg, field = validation_error(list(exc.errors()))
        return None, msg, field


def render(request: Request, name: str, status: int = 200, **ctx: Any) -> Response:
    from mlrig.web.schemas import SetupQuery

    given = ctx.get("v") or {}
    setup_given = any(given.get(k) not in (None, "") for k in SetupQuery.model_fields)  # open the setup section
    return templates.TemplateResponse(request, f"{name}.html", {"page": name, "setup_given": setup_given, **ctx},
                                      status_code=status)


def catalog_lists() -> dict[str, Any]:
    from mlrig.catalog.gpus import load_gpus
    from mlrig.catalog.models import load_model_catalog

    models = sorted({a.hf_id or a.id for a in load_model_catalog()}, key=str.lower)
    return {"model_names": models, "gpu_list": [(g.id, g.name) for g in load_gpus()],
            "engines": ENGINES, "precisions": PRECISIONS}


def memory_chart(result: dict[str, Any]) -> str | None:
    mem = result.get("memory")
    if not mem:
        return None
    parts = [(label, mem.get(key) or 0.0) for label, key in MEMORY_PARTS]
    return charts.stacked_bar("Memory per GPU (GiB = 2^30 bytes)", parts, mem.get("gpu_capacity_gib"))


def roofline_chart(roof: dict[str, Any] | None) -> str | None:
    if not roof or not roof["points"]:
        return None
    peak, bw = roof["peak_tflops"], roof["bandwidth_gb_s"]
    xs = [p["intensity_flop_per_byte"] for p in roof["points"]] + [roof["ridge_flop_per_byte"]]
    lo, hi = min(xs) / 4, max(xs) * 4
    grid = [lo * (hi / lo) ** (i / 40) for i in range(41)]
    roof_line = charts.Series(f"roof: {bw:,.0f} GB/s, {peak:,.0f} TFLOPS", [(x, min(peak, bw * x / 1e3)) for x in grid])
    pts = [charts.Series(p["name"], [(p["intensity_flop_per_byte"], p["attained_tflops"])], kind="points",
                         labels=[p["name"]], colour=charts.PALETTE[1 + i]) for i, p in enumerate(roof["points"])]
    ys = [p["attained_tflops"] for p in roof["points"]] + [peak]
    return charts.xy(f"Roofline on {roof['gpu']} (per GPU, datasheet ceilings)", [roof_line, *pts],
                     x=charts.Axis(lo, hi, log=True), y=charts.axis_for([min(ys) / 3, peak * 1.5], log=True),
                     x_label="arithmetic intensity, FLOP per byte", y_label="TFLOPS",
                     marks=[charts.Mark("x", roof["ridge_flop_per_byte"], "ridge")])


def add_page_routes(app: FastAPI) -> None:
    hub = bool(app.state.allow_hub)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request) -> Response:
        return render(request, "index")

    @app.get("/plan", response_class=HTMLResponse, include_in_schema=False)
    def plan_page(request: Request) -> Response:
        values = form_values(request)
        for key in ("config", "weights", "weights_size"):  # the upload's fields, when the GET button was used
            values.pop(key, None)
        ctx: dict[str, Any] = {"v": values, **catalog_lists()}
        if "model" not in values:
            return render(request, "plan", **ctx)
        q, err, field = parse(PlanQuery, values)
        if q is None:
            return render(request, "plan", 400, error=err, error_field=field, **ctx)
        try:
            result = service.plan(q, allow_hub=hub)
            data = service.plan_data(q)
            ctx.update(plan_context(result, data, None))
        except MlrigError as exc:
            return render(request, "plan", 400, error=str(exc), error_field=error_field(exc), **ctx)
        return render(request, "plan", **ctx)

    @app.post("/plan", response_class=HTMLResponse, include_in_schema=False)
    async def plan_upload_page(request: Request) -> Response:
        form = await request.form(max_files=2, max_fields=60)
        values = {k: v for k, v in form.items() if isinstance(v, str) and v.strip()}
        ctx: dict[str, Any] = {"v": values, **catalog_lists(), "uploaded": True}
        values.pop("weights_size", None)
        q, err, field = parse(PlanUploadQuery, values)
        if q is None:
            return render(request, "plan", 400, error=err, error_field=field, **ctx)
        cfg, wts = form.get("config"), form.get("weights")
        size_text = str(form.get("weights_size") or "").strip()
        try:
            if size_text and not size_text.isdigit():
                raise service.FieldError("weights_size", "weights_size must be a whole number of bytes")
            arch = await upload_arch(cfg if isinstance(cfg, StarletteUpload) else None,  # type: ignore[arg-type]
                                     wts if isinstance(wts, StarletteUpload) else None,  # type: ignore[arg-type]
                                     int(size_text) if size_text else None)
            result = service.plan_upload(q, arch)
            data = service.plan_data(q, q.model or arch.id)
            ctx.update(plan_context(result, data, arch))
        except MlrigError as exc:
            return render(request, "plan", 400, error=str(exc), error_field=error_field(exc), **ctx)
        return render(request, "plan", **ctx)

    @app.get("/compare", response_class=HTMLResponse, include_in_schema=False)
    def compare_page(request: Request) -> Response:
        values = form_values(request, lists=("gpu", "precision", "engine"))
        ctx: dict[str, Any] = {"v": values, **catalog_lists()}
        if "model" not in values:
            return render(request, "compare", **ctx)
        q, err, field = parse(CompareQuery, values)
        if q is None:
            return render(request, "compare", 400, error=err, error_field=field, **ctx)
        try:
            rows = service.compare(q, allow_hub=hub)
        except MlrigError as exc:
            return render(request, "compare", 400, error=str(exc), error_field=error_field(exc), **ctx)
        ok = [r for r in rows if not r["result"].get("error")]
        labels = [r["variant"] for r in ok]
        perf = [r["result"].get("performance") or {} for r in ok]
        mem = [r["result"].get("memory") or {} for r in ok]
        training = any(p.get("train_tokens_per_s") for p in perf)
        key = "train_tokens_per_s" if training else "decode_tok_s"
        ctx.update(rows=rows, training=training, charts=[
            charts.bars("Training tokens/s" if training else "Decode tok/s per sequence (± validation band)", labels,
                        [("speed", [p.get(key) for p in perf])], "tokens/s" if training else "tok/s",
                        bands=[[(p.get("error_band") or {}).get(key) for p in perf]]),
            charts.bars("Memory per GPU vs capacity", labels,
                        [("needed", [m.get("per_gpu_gib") for m in mem]),
                         ("capacity", [m.get("gpu_capacity_gib") for m in mem])], "GiB"),
        ] if ok else [])
        return render(request, "compare", **ctx)

    @app.get("/serve", response_class=HTMLResponse, include_in_schema=False)
    def serve_page(request: Request) -> Response:
        values = form_values(request)
        ctx: dict[str, Any] = {"v": values, **catalog_lists()}
        if "model" not in values:
            return render(request, "serve", **ctx)
        q, err, field = parse(ServeQuery, values)
        if q is None:
            return render(request, "serve", 400, error=err, error_field=field, **ctx)
        try:
            out = service.serve(q, allow_hub=hub)
        except MlrigError as exc:
            return render(request, "serve", 400, error=str(exc), error_field=error_field(exc), **ctx)
        ctx.update(out=out, charts=serve_charts(out), bands=user_bands(out))
        return render(request, "serve", **ctx)

    @app.get("/recommend", response_class=HTMLResponse, include_in_schema=False)
    def recommend_page(request: Request) -> Response:
        values = form_values(request)
        ctx: dict[str, Any] = {"v": values, **catalog_lists()}
        if "model" not in values:
            return render(request, "recommend", **ctx)
        q, err, field = parse(RecommendQuery, values)
        if q is None:
            return render(request, "recommend", 400, error=err, error_field=field, **ctx)
        try:
            rec = service.recommend(q, allow_hub=hub)
        except MlrigError as exc:
            return render(request, "recommend", 400, error=str(exc), error_field=error_field(exc), **ctx)
        feasible = [o for o in rec["options"] if o["feasible"]]
        ctx.update(rec=rec, feasible=feasible, excluded=len(rec["options"]) - len(feasible),
                   chart=pareto_chart(feasible))
        return render(request, "recommend", **ctx)

    @app.get("/cost", response_class=HTMLResponse, include_in_schema=False)
    def cost_page(request: Request) -> Response:
        values = form_values(request, lists=("rent",))
        ctx: dict[str, Any] = {"v": values, **catalog_lists()}
        if not values:
            return render(request, "cost", **ctx)
        q, err, field = parse(CostQuery, values)
        if q is None:
            return render(request, "cost", 400, error=err, error_field=field, **ctx)
        try:
            res = service.cost(q)
            curve = service.cost_curve(q)
        except MlrigError as exc:
            return render(request, "cost", 400, error=str(exc), error_field=error_field(exc), **ctx)
        ctx.update(res=res, chart=cost_chart(res, curve))
        return render(request, "cost", **ctx)

    @app.get("/diagnose", response_class=HTMLResponse, include_in_schema=False)
    def diagnose_page(request: Request) -> Response:
        return render(request, "diagnose")

    @app.post("/diagnose", response_class=HTMLResponse, include_in_schema=False)
    async def diagnose_upload(request: Request) -> Response:
        form = await request.form(max_files=1, max_fields=5)
        f = form.get("file")
        if not isinstance(f, StarletteUpload) or not f.filename:
            return render(request, "diagnose", 400, error="choose a file: timeline.csv or the --json report",
                          error_field="file")
        try:
            data = await read_upload(f, service.MAX_DIAGNOSE_BYTES, "file")  # type: ignore[arg-type]
            parsed = service.parse_diagnose(data, f.filename)
        except MlrigError as exc:
            return render(request, "diagnose", 400, error=str(exc), error_field=error_field(exc))
        return render(request, "diagnose", filename=f.filename, report=parsed["report"],
                      timeline=parsed["timeline"], charts=timeline_charts(parsed["timeline"]))


def plan_context(result: dict[str, Any], data: dict[str, Any], arch: Any) -> dict[str, Any]:
    """What the plan page shows besides the result: charts, the speed rows with bands, fits-on."""
    roof = views.roofline(data, result, arch) if not result.get("error") else None
    perf = result.get("performance") or {}
    band = perf.get("error_band") or {}
    validation = result.get("validation") or {}
    from mlrig.commands._common import band_kind, is_overload_band, max_model_len_clause, precision_text

    speed = [{"label": label, "key": key, "unit": unit, "value": perf.get(key), "band": band.get(key),
              "validation": validation.get(key) if isinstance(validation, dict) else None}
             for label, key, unit in SPEED_ROWS if perf.get(key) is not None]
    from mlrig.commands.markdown import band_text

    for s in speed:  # what the band is: its scope's p90, or the default where few runs back it
        s["band_kind"] = band_kind(float(s["band"]), s["validation"]) if s["band"] else None
        if s["band"]:  # worded as `mlrig plan` words it; a range never below zero (a band past 100 %)
            b, value = float(s["band"]), float(perf.get(str(s["key"])) or 0.0)
            text = band_text(str(s["key"]), b, perf)
            if is_overload_band(str(s["key"]), b, perf.get("capacity_requests_per_s") is not None):
                s["band_kind"] = "a rate near or past capacity"
            s["band_text"], s["range"] = text, (max(0.0, value * (1.0 - b)), value * (1.0 + b))
    fits = views.fits_on(data, arch)
    hw = data.get("hardware") or {}
    return {"result": result, "gpu_count": int(hw.get("count") or 1) * int(hw.get("nodes") or 1),
            # a QLoRA plan's NF4 base
            "precision_text": precision_text(result.get("precision"), result.get("base_weights_precision")),
            "max_model_len_clause": max_model_len_clause(result.get("max_model_len_limit_tokens")),
            "speed": speed, "validation": validation, "roof": roof,
            "memory_chart": memory_chart(result), "roofline_chart": roofline_chart(roof),
            "fits_on": [r for r in fits if r["fits"]][:15], "fits_count": sum(r["fits"] for r in fits),
            "gpus_tried": len(fits), "training": perf.get("train_tokens_per_s") is not None}


def user_bands(out: dict[str, Any]) -> list[float]:
    """The ± band of each curve point's per-user speed (validation.scopes.per_user_band)."""
    from mlrig.validation.scopes import per_user_band

    one, more = out.get("decode_error_band") or 0.0, out.get("tpot_error_band") or 0.0
    return [per_user_band(one, more, p["concurrency"]) for p in out.get("curve") or []]


def serve_charts(out: dict[str, Any]) -> list[str]:
    curve = out.get("curve") or []
    if not curve:
        return []
    users = [(float(p["concurrency"]), p["tok_s_per_user"]) for p in curve]
    bands = user_bands(out)
    log_x = len(curve) > 2 and curve[-1]["concurrency"] / max(1, curve[0]["concurrency"]) >= 16
    marks = [charts.Mark("y", out["min_tok_s_per_user"], f"target {out['min_tok_s_per_user']:g} tok/s")]
    if out.get("max_concurrency"):
        marks.append(charts.Mark("x", out["max_concurrency"], f"max {out['max_concurrency']:,} users"))
    per_user = charts.xy("Per-user decode speed over concurrency", [
        charts.Series("tok/s per user", users),
        charts.Series("− band", [(x, y * (1 - b)) for (x, y), b in zip(users, bands, strict=True)],
                      dashed=True, colour=charts.PALETTE[5]),
        charts.Series("+ band", [(x, y * (1 + b)) for (x, y), b in zip(users, bands, strict=True)],
                      dashed=True, colour=charts.PALETTE[5])],
        x_label="concurrent users", y_label="tok/s per user", log_x=log_x, marks=marks)
    total = charts.xy("Total throughput over concurrency", [
        charts.Series("total tok/s", [(float(p["concurrency"]), p["throughput_tok_s"]) for p in curve])],
        x_label="concurrent users", y_label="tok/s", log_x=log_x,
        marks=marks[1:])
    out_charts = [per_user, total]
    if out.get("max_ttft_ms"):
        out_charts.append(charts.xy("Time to first token over concurrency", [
            charts.Series("TTFT", [(float(p["concurrency"]), p["ttft_ms"]) for p in curve])],
            x_label="concurrent users", y_label="ms", log_x=log_x,
            marks=[charts.Mark("y", out["max_ttft_ms"], f"target {out['max_ttft_ms']:g} ms"), *marks[1:]]))
    return out_charts


def pareto_chart(options: list[dict[str, Any]]) -> str | None:
    pts = [o for o in options if o.get("speed_score")]
    if not pts:
        return None
    front = [o for o in pts if o.get("pareto")]
    rest = [o for o in pts if not o.get("pareto")]
    series = [charts.Series("other options", [(o["total_cost_usd"], o["speed_score"]) for o in rest], kind="points",
                            colour="#9aa5b1"),
              charts.Series("Pareto front (cost vs speed)", [(o["total_cost_usd"], o["speed_score"]) for o in front],
                            kind="points", labels=[o["name"][:28] for o in front], colour=charts.PALETTE[3])]
    return charts.xy("Options: total cost vs speed", series, x_label="total cost over the horizon, USD",
                     y_label="speed score", log_x=max(o["total_cost_usd"] for o in pts) > 20 * max(
                         1.0, min(o["total_cost_usd"] for o in pts)))


def cost_chart(res: dict[str, Any], curve: dict[str, list[float]]) -> str:
    hours = curve["hours"]
    series = [charts.Series(name, list(zip(hours, ys, strict=True)), dashed=name != "local")
              for name, ys in curve.items() if name != "hours"]
    be = []
    for c in res["comparisons"]:
        if c["cloud"]["name"] not in curve:
            continue
        h = c["break_even_hours_per_month"]
        if h is not None and hours[0] <= h <= hours[-1]:
            y = _interp(hours, curve["local"], h)
            be.append((h, y, f"{c['cloud']['name']}: {h:,.0f} h"))
    if be:
        series.append(charts.Series("break-even", [(h, y) for h, y, _ in be], kind="points",
                                    labels=[lbl for _, _, lbl in be], colour="#000000"))
    marks = [charts.Mark("x", res["usage"]["hours_per_month"], f"your use: {res['usage']['hours_per_month']:,.0f} h")]
    return charts.xy("Cost per month: buy vs the cheapest rentals (all in the table)", series,
                     x_label="busy GPU hours per month", y_label="USD per month", marks=marks, height=360)


def _interp(xs: list[float], ys: list[float], x: float) -> float:
    for i in range(1, len(xs)):
        if xs[i] >= x:
            f = (x - xs[i - 1]) / (xs[i] - xs[i - 1]) if xs[i] > xs[i - 1] else 0.0
            return ys[i - 1] + f * (ys[i] - ys[i - 1])
    return ys[-1]


def series_pts(series: list[charts.Series]) -> list[tuple[str, list[float]]]:
    return [(s.name, [y for _, y in s.points]) for s in series]


UNITS = [("_gib", "GiB"), ("_mb_s", "MB/s"), ("_gb_s", "GB/s"), ("_w", "W"), ("_c", "°C"),
         ("_mhz", "MHz")]


def timeline_charts(tl: dict[str, Any] | None) -> list[str]:
    """One chart per unit (%, GiB, MB/s, ...), the timeline's columns grouped by their unit suffix."""
    if not tl or not tl["t_s"]:
        return []
    groups: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for name, ys in tl["series"].items():
        unit = "%" if "_percent" in name else next((u for suffix, u in UNITS if name.endswith(suffix)), "count")
        pts = service.thin(tl["t_s"], ys)
        if pts:
            groups.setdefault(unit, {})[name] = pts
    out = []
    for unit, cols in groups.items():
        series = [charts.Series(n, p) for n, p in list(cols.items())[:8]]
        top = max((v for _, pts in series_pts(series) for v in pts), default=0.0)
        y = charts.axis_for([0.0, max(100.0, top)], pad=0.02) if unit == "%" else None
        out.append(charts.xy(f"Timeline: {unit}", series, y=y, x_label="time, s", y_label=unit, height=260))
    return out


__all__ = ["add_page_routes"]
