"""`mlrig models` (list the built-in model catalog) and `mlrig inspect` (what a file/name resolves to)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from mlrig.catalog.models import ModelArch


def _attention(a: ModelArch) -> str:
    if a.is_mla:
        kind = "MLA"
    elif a.kv_heads == 1:
        kind = "MQA"
    elif a.kv_heads < a.num_heads:
        kind = "GQA"
    else:
        kind = "MHA"
    if a.num_sliding_layers:
        kind += f" +SWA {a.sliding_window} ({a.num_sliding_layers}/{a.num_layers})"
    return kind


def _family(a: ModelArch) -> str:
    """'qwen3_moe' -> 'qwen', 'gemma3_text' -> 'gemma', 'gpt_oss' -> 'gpt-oss', 'gpt2' -> 'gpt2'."""
    import re

    if a.model_type in ("gpt2", "t5"):
        return a.model_type
    if a.model_type == "gpt_oss":
        return "gpt-oss"
    return re.sub(r"[\d_].*$", "", a.model_type) or a.model_type


def _row(a: ModelArch) -> dict[str, Any]:
    p = a.params()
    return {
        "id": a.id, "hf_id": a.hf_id, "catalog_id": a.catalog_id, "family": _family(a),
        "model_type": a.model_type, "params": p.total, "active_params": p.active,
        "params_stated": a.params_stated, "layers": a.total_layers, "hidden_size": a.hidden_size,
        "attention": _attention(a), "context_tokens": a.max_position_embeddings, "torch_dtype": a.torch_dtype,
        "quant_method": a.quant_method, "source": a.source,
    }


def model_rows(search: str | None = None, family: str | None = None,
               max_params: float | None = None) -> list[dict[str, Any]]:
    """`mlrig models --json`: catalog rows matching the filters, by family then size."""
    from mlrig.catalog.models import load_model_catalog
    from mlrig.errors import require_positive

    require_positive("--max-params", max_params)
    rows = [_row(a) for a in load_model_catalog()]
    if search:  # every word of it, in the id or the HF id ('llama 3.1' finds llama-3.1-8b)
        words = search.lower().split() or [search.lower()]
        rows = [r for r in rows if any(all(w in name for w in words) for name in (r["id"], (r["hf_id"] or "").lower()))]
    if family:
        f = family.lower()
        rows = [r for r in rows if r["family"] == f or r["model_type"].startswith(f)]
    if max_params is not None:
        rows = [r for r in rows if r["params"] <= max_params * 1e9]
    rows.sort(key=lambda r: (r["family"], r["params"]))
    return rows


def models_cmd(
    search: Annotated[str | None, typer.Option("--search", "-s", help="substring of id / HF id")] = None,
    family: Annotated[str | None, typer.Option(
        "--family", "-f", help="family or model_type prefix: llama, qwen, qwen3, gemma2...")] = None,
    max_params: Annotated[float | None, typer.Option("--max-params", help="total params, billions")] = None,
    wide: Annotated[bool, typer.Option("--wide", "-w", help="also the Hugging Face repo id")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON list on stdout")] = False,
) -> None:
    """List the built-in model catalog (params are exact counts derived from each published config)."""
    from mlrig.commands._common import console, print_json

    rows = model_rows(search, family, max_params)
    if as_json:
        print_json(rows)
        return
    from mlrig.commands._common import narrow_table

    cols = [("id", "left"), ("HF id", "left"), ("params B", "right"), ("active B", "right"),
            ("layers", "right"), ("attention", "left"), ("context", "right")]
    if not wide:
        cols.pop(1)
    table_rows = []
    for r in rows:
        active = f"{r['active_params'] / 1e9:.2f}" if r["active_params"] != r["params"] else ""
        ctx = f"{r['context_tokens']:,}" if r["context_tokens"] else "-"
        cells = [r["id"], r["hf_id"] or "", f"{r['params'] / 1e9:.2f}", active, str(r["layers"]), r["attention"], ctx]
        if not wide:
            cells.pop(1)
        table_rows.append(cells)
    t = narrow_table(f"mlrig model catalog ({len(rows)} models; params in billions, exact counts from config)",
                     cols, table_rows, flexible=("id", "HF id", "attention"))
    console().print(t)
    if not rows:  # as `mlrig gpus` says; a model outside the catalog is still usable by its HF id or a path
        console().print("no catalog model matches these filters; try `mlrig models` without filters, or give "
                        "`mlrig plan` the model's HF id (org/name), config.json, model folder or .gguf file",
                        highlight=False)


def inspect_cmd(
    target: Annotated[str, typer.Argument(
        help="config.json, model folder, .safetensors, .gguf, or a model name")],
    as_json: Annotated[bool, typer.Option("--json", help="JSON on stdout")] = False,
) -> None:
    """Show what mlrig reads from a model file or name: architecture, exact params, bytes per dtype."""
    from mlrig.catalog.models import resolve_model
    from mlrig.commands._common import console, print_json

    a = resolve_model(target)
    p = a.params()
    if as_json:
        print_json({"arch": a, "params": p.total, "active_params": p.active,
                    "breakdown": p.__dict__, "attention": _attention(a)})
        return
    from rich.table import Table

    t = Table(title=f"{a.hf_id or a.id}", show_header=False)
    t.add_column("field")
    t.add_column("value")
    t.add_row("source", a.source)
    t.add_row("model_type / kind", f"{a.model_type} / {a.kind}")
    t.add_row("layers / hidden / heads / kv / head_dim",
              f"{a.total_layers} / {a.hidden_size} / {a.num_heads} / {a.kv_heads} / {a.dim_head}")
    t.add_row("attention", _attention(a))
    if a.is_moe:
        t.add_row("experts", f"{a.num_experts} (top-{a.experts_per_token}, {a.num_shared_experts} shared)")
    t.add_row("params (derived)", f"{p.total:,} ({p.total / 1e9:.3f} B)")
    if a.is_moe:
        t.add_row("active params", f"{p.active:,} ({p.active / 1e9:.3f} B)")
    if a.params_stated:
        t.add_row("params (published)", f"{a.params_stated:,}")
    if a.params_in_file is not None:
        t.add_row("elements in file", f"{a.params_in_file:,}")
    if a.weight_bytes is not None:
        t.add_row("weight bytes", f"{a.weight_bytes:,} ({a.weight_bytes / 2**30:.2f} GiB), {a.weight_format}")
        for k, v in sorted(a.weight_bytes_by_dtype.items(), key=lambda kv: -kv[1]):
            t.add_row(f"  {k}", f"{v:,} bytes")
    t.add_row("context", f"{a.max_position_embeddings:,}" if a.max_position_embeddings else "-")
    for n in a.notes:
        t.add_row("note", n)
    console().print(t)


def register(app: typer.Typer) -> None:
    app.command("models")(models_cmd)
    app.command("inspect")(inspect_cmd)
