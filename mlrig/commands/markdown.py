"""GitHub-flavoured Markdown for `mlrig plan --markdown` and `mlrig compare --markdown`: a table to paste into
an issue. Rendering only: it reads what `--json` prints (PLAN-FORMAT.md), so the figures are the same.
Units are in every header (GiB = 2^30 bytes, tok/s, ms); the engine and each figure's validation scope are
shown as the terminal output shows them."""

from __future__ import annotations

from typing import Any

from mlrig.commands._common import (
    NO_PRICES,
    SHORT_BOUND,
    fmt_num,
    is_overload_band,
    limits_line,
    max_model_len_clause,
    overload_band_text,
    pooled_engines,
    price_cells,
    price_footnote,
    reservation_caption,
    shortfall_text,
)

GIB_NOTE = "GiB = 2^30 bytes"


def band_text(key: str, band: float, perf: dict[str, Any]) -> str:
    """A figure's ± band, as `mlrig plan` words it. A rate run's TTFT band above 100 % (near or past capacity,
    serving.overload_ttft_band; such a run reports capacity_requests_per_s) is one-sided: "up to xN if the
    capacity is lower". Any other band, a static or closed-loop TTFT's included, is the scope's symmetric ±."""
    if is_overload_band(key, band, perf.get("capacity_requests_per_s") is not None):
        return overload_band_text(band)
    return f"±{band * 100:.0f}%"


def cell(text: object) -> str:
    """One table cell: a '|' would end the cell and a newline the row, so both are escaped."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list[str]], right: set[int] | None = None) -> list[str]:
    """A GFM pipe table; columns in `right` (indices) are right-aligned (figures)."""
    right = right or set()
    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def validated(v: dict[str, Any] | None, banded: bool = True) -> str:
    """A figure's validation as `plan`'s "Validated:" line words it; `banded`: the figure has a ± band (a small
    scope then says the band was kept at the default; memory figures have none)."""
    if not v:
        return "—"
    if v.get("validated"):
        from mlrig.validation.scopes import SMALL_SCOPE_TEXT, small_scope

        few = f" ({SMALL_SCOPE_TEXT})" if banded and small_scope(int(v["rows"])) else ""
        return (f"{v['rows']} runs ({v['scope']}), median {(v.get('median_error') or 0) * 100:.0f}%, "
                f"p90 {(v.get('p90_error') or 0) * 100:.0f}%{few}")
    near = f"; nearest: {v['nearest']}" if v.get("nearest") else ""
    return f"not validated ({v['scope']}{near})"


def plan_markdown(out: dict[str, Any], n_gpus: int, task: str, sharding: str = "",
                  precision: str | None = None) -> str:
    """`mlrig plan --markdown`: headline, memory per GPU, speed with its band and validation, limits, the
    changes that would make it fit, notes. `out` is `plan_json()`'s dict; `sharding` the headline's ZeRO
    stage (`plan.sharding_text`); `precision` the headline's precision in words (`_common.precision_text`: a
    QLoRA plan's NF4 base), else the result's."""
    mem, perf = out.get("memory") or {}, out.get("performance") or {}
    engine = f" ({out['engine']})" if out.get("engine") else ""
    head = f"**{out['model']}** · {precision or out['precision']} · {task}{engine}"
    lines = [f"{head} on {n_gpus} × {out['gpu']}{sharding}", ""]
    from mlrig.estimators.replicas import layout_line

    replicas = out.get("data_parallel_replicas") or 1
    layout = layout_line(replicas, out.get("notes", []))
    if layout:  # "8 GPUs = 8 replicas x TP 1", as `mlrig plan` prints it
        lines += [f"{layout} (data parallel: each replica serves its share of the load)", ""]
    if not mem:
        return "\n".join(lines)
    verdict = "✔ fits" if out.get("fits") else "✘ does not fit"
    if out.get("fits"):
        verdict += max_model_len_clause(out.get("max_model_len_limit_tokens"))
    pool = (f"; the engine's reservation, {mem['headroom_gib']:+.2f} GiB of KV pool to spare beyond one sequence"
            if pooled_engines([out]) and mem["headroom_gib"] >= 0 else "")
    lines += [f"{verdict}: {mem['per_gpu_gib']:.2f} GiB of {mem['gpu_capacity_gib']:.2f} GiB per GPU "
              f"({GIB_NOTE}{pool})", ""]
    comps = [("weights", "weights_gib"), ("KV cache", "kv_cache_gib"), ("activations / workspace", "activations_gib"),
             ("gradients", "gradients_gib"), ("optimizer states", "optimizer_gib"),
             ("runtime overhead", "overhead_gib")]
    rows = [[name, f"{mem[key]:.2f}"] for name, key in comps if mem.get(key)]
    rows.append(["**total per GPU**", f"**{mem['per_gpu_gib']:.2f}**"])
    if mem.get("host_ram_gib"):
        rows.append(["host RAM", f"{mem['host_ram_gib']:.2f}"])
    lines += table(["memory per GPU", "GiB"], rows, right={1})
    if out.get("kv_cache_capacity_tokens") is not None:
        each = f" per replica (x{replicas} replicas)" if replicas > 1 else ""
        lines += ["", f"KV-cache capacity: {out['kv_cache_capacity_tokens']:,} tokens{each}"]
    if perf:
        band, val = perf.get("error_band") or {}, out.get("validation") or {}
        if task == "inference":
            figs = [("prefill", "prefill_tok_s", "tok/s"), ("TTFT", "ttft_ms", "ms"),
                    ("decode per sequence", "decode_tok_s", "tok/s"), ("TPOT", "tpot_ms", "ms"),
                    ("throughput", "throughput_tok_s", "tok/s")]
        else:
            figs = [("training", "train_tokens_per_s", "tokens/s"), ("step", "step_time_s", "s")]
        srows = [[label, f"{fmt_num(perf[key], 2 if unit == 's' else 1)} {unit}",
                  band_text(key, band[key], perf) if key in band else "—", validated(val.get(key))]
                 for label, key, unit in figs if perf.get(key) is not None]
        if perf.get("mfu") is not None:
            srows.append(["MFU", f"{perf['mfu'] * 100:.0f}%", "—", "—"])
        if perf.get("time_to_train_s") is not None:
            srows.append(["time to train", f"{perf['time_to_train_s'] / 3600:,.1f} h", "—", "—"])
        if task == "inference" and perf.get("prompt_tokens") is not None:
            srows.append(["request", f"{perf['prompt_tokens']:,} in + {perf['output_tokens']:,} out tokens", "—", "—"])
        srows.append(["bound", perf.get("bound") or "—", "—", "—"])
        srows.append(["memory per GPU", f"{mem['per_gpu_gib']:.2f} GiB", "—",
                      validated(val.get("per_gpu_gib"), banded=False)])
        lines += ["", *table(["figure", "estimate", "band", "validated on"], srows, right={1, 2})]
        if perf.get("explanation"):
            lines += ["", f"_{perf['explanation']}_"]
        others = perf.get("other_engines") or {}
        if others:  # the terminal's "Other engines" line: the default engine is one choice of several
            lines += ["", "Other engines (decode / prefill tok/s): " + " · ".join(
                f"{name} {fmt_num(v.get('decode_tok_s'))} / {fmt_num(v.get('prefill_tok_s'))}"
                for name, v in others.items())]
    lims = out.get("limits") or {}
    if lims:
        lines += ["", limits_line(lims)]
    fixes = out.get("fixes") or []
    if not out.get("fits") and fixes:
        unit = "tok/s" if task == "inference" else "tokens/s"
        lines += ["", "To make it fit, change one of:", ""]
        lines += table(["flags", "GiB per GPU", unit, "change"],
                       [[f"`{f['flags']}`", f"{f['per_gpu_gib']:.2f} of {f['gpu_capacity_gib']:.2f}",
                         fmt_num(f.get("tok_s")) if f.get("tok_s") else "—",
                         f["change"] + (f" ({f['note']})" if f.get("note") else "")] for f in fixes],
                       right={1, 2})
    notes = [*mem.get("notes", []), *out.get("notes", [])]
    if notes:
        lines += [""] + [f"- note: {n}" for n in notes]
    return "\n".join(lines)


def _headline_validation(res: dict[str, Any]) -> dict[str, Any] | None:
    """The validation of a row's speed figure: decode tok/s, or training tokens/s for a training plan."""
    val = res.get("validation") or {}
    return val.get("decode_tok_s") or val.get("train_tokens_per_s")


def compare_markdown(title: str, rows: list[dict[str, Any]], training: bool = False) -> str:
    """`mlrig compare --markdown`: one row per variant as the terminal table, with units in the headers,
    each speed's p90 band and the scope that band comes from (the decode figure's, or for `training` rows
    the training tokens/s figure's; the others are in `--json`). Training rows show training tokens/s, step
    time and MFU in place of decode / prefill / TTFT, which a training plan does not have."""
    hours = training and any((r["result"].get("performance") or {}).get("time_to_train_s") for r in rows)
    speed_header = (["training tokens/s", "step s", "MFU %", *(["time to train h"] if hours else [])] if training
                    else ["decode tok/s", "prefill tok/s", "TTFT ms"])
    priced = any(r.get("price") for r in rows)
    speed = "training tokens/s" if training else "decode tok/s"
    price_header = ["price $ (u = used)", f"$ per {speed}"] if priced else []
    header = ["variant", "engine", "GiB/GPU", "fits", *speed_header, *price_header, "bound",
              "validated on (decode / training speed)"]
    body: list[list[str]] = []
    errors: list[str] = []
    for r in rows:
        res = r["result"]
        if res.get("error"):
            body.append([r["variant"], "—", "—", "error", *["—"] * len(speed_header),
                         *(price_cells(r.get("price")) if priced else []), "—", "—"])
            errors.append(f"- {r['variant']}: {res['error']}")
            continue
        mem, perf = res.get("memory") or {}, res.get("performance") or {}
        if res.get("fits") is False:  # no speed for a plan that does not fit, only why (as `plan`)
            perf = {}
            errors.append(f"- {r['variant']}: does not fit{shortfall_text(res)}")
        band = perf.get("error_band") or {}

        def fig(key: str, band: dict[str, float] = band, perf: dict[str, Any] = perf, digits: int = 1) -> str:
            val = fmt_num(perf.get(key), digits)
            return f"{val} {band_text(key, band[key], perf)}" if key in band and perf.get(key) is not None else val

        mfu = perf.get("mfu")
        speeds = ([fig("train_tokens_per_s"), fig("step_time_s", digits=2), "—" if mfu is None else f"{mfu * 100:.0f}"]
                  if training else [fig("decode_tok_s"), fig("prefill_tok_s"), fig("ttft_ms")])
        if hours:
            ttt = perf.get("time_to_train_s")
            speeds.append("—" if ttt is None else fmt_num(ttt / 3600))
        body.append([r["variant"], res.get("engine") or "—", fmt_num(mem.get("per_gpu_gib"), 2),
                     "yes" if res.get("fits") else "**no**", *speeds,
                     *(price_cells(r.get("price")) if priced else []),
                     SHORT_BOUND.get(perf.get("bound") or "", perf.get("bound") or "—"),
                     validated(_headline_validation(res))])
    lines = [f"**{title}**: side by side ({GIB_NOTE}; ± is each figure's validation band: the p90 error over "
             "its scope's published runs, or the default band where the scope has few runs)", ""]
    lines += table(header, body, right={2, *range(4, 4 + len(speed_header) + len(price_header))})
    if priced:
        lines += ["", price_footnote(rows, training), "",
                  "price sources: " + "; ".join(f"{k} ({d})" for k, d in dict.fromkeys(
                      (r["price"]["key"], r["price"]["date"]) for r in rows if r.get("price")))]
    elif any(not r["result"].get("error") for r in rows):
        lines += ["", NO_PRICES]
    reservation = reservation_caption(pooled_engines([r["result"] for r in rows]), headroom_column=False)
    if reservation:
        lines += ["", reservation]
    if errors:
        lines += ["", *errors]
    return "\n".join(lines)
