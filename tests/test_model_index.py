"""The precomputed model index (mlrig/data/models_index.json) must match its sources.

`mlrig plan` reads the index instead of parsing every catalog config; these tests make sure the
index is exactly what scripts/build_model_index.py builds from mlrig/data/models/*.json, and
that resolving through it gives the same architectures as parsing the configs.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from mlrig.catalog.models import _catalog_entries, _index_path, catalog_from_configs, resolve_model

ROOT = Path(__file__).resolve().parents[1]


def _build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_model_index", ROOT / "scripts/build_model_index.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_shipped_index_is_what_the_script_builds() -> None:
    shipped = _index_path().read_text(encoding="utf-8")
    assert shipped == _build_script().build_text(), (
        "mlrig/data/models_index.json is stale: run python scripts/build_model_index.py")


def test_index_round_trips_to_the_archs_parsed_from_configs() -> None:
    from_configs = catalog_from_configs()
    from_index = _catalog_entries()
    import json

    configs = [json.loads(p.read_text(encoding="utf-8")) for p in (ROOT / "mlrig/data/models").glob("*.json")]
    assert len(from_index) == len(from_configs) == len(configs) + sum(len(c.get("_variants", [])) for c in configs)
    for (a, ka), (b, kb) in zip(from_index, from_configs, strict=True):
        assert a == b, a.id
        assert ka == kb, a.id


def test_resolving_a_catalog_model_parses_no_config() -> None:
    """The point of the index: a catalog name resolves without the config reader (mlrig.catalog.readers)."""
    import subprocess

    code = ("import sys; from mlrig.catalog.models import resolve_model; a = resolve_model('llama-3.1-8b'); "
            "print(a.hf_id, 'mlrig.catalog.readers.hf_config' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [resolve_model("llama-3.1-8b").hf_id, "False"]


def test_check_mode_reports_a_stale_index(tmp_path: Path) -> None:
    import subprocess

    stale = tmp_path / "models_index.json"
    stale.write_text("{}\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/build_model_index.py"), "--check", "--out", str(stale)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "stale" in proc.stderr


def test_an_instruct_variant_has_its_own_context_limit() -> None:
    """Qwen2.5-7B-Instruct's config.json sets max_position_embeddings 32768 where the base repo has
    131072; the variant entry keeps the base architecture and takes the Instruct limit, so a 64k
    context is refused for the Instruct repo (and its AWQ re-upload) and allowed for the base."""
    from mlrig import plan
    from mlrig.errors import MlrigError

    base, instruct = resolve_model("Qwen/Qwen2.5-7B"), resolve_model("Qwen/Qwen2.5-7B-Instruct")
    assert (base.max_position_embeddings, instruct.max_position_embeddings) == (131072, 32768)
    assert instruct.total_params == base.total_params and instruct.hf_id == "Qwen/Qwen2.5-7B-Instruct"
    assert resolve_model("qwen2.5-7b-instruct").max_position_embeddings == 32768
    assert resolve_model("Qwen/Qwen2.5-7B-Instruct-AWQ").max_position_embeddings == 32768
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct").max_position_embeddings == 32768  # same as its base
    for name in ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct-AWQ"):
        try:
            plan(name, gpu="h100-sxm-80gb", context_tokens=65536)
        except MlrigError as exc:
            assert "32,768" in str(exc) and "allow-long-context" in str(exc)
        else:
            raise AssertionError(f"{name} at 64k should be refused")
    assert plan("Qwen/Qwen2.5-7B", gpu="h100-sxm-80gb", context_tokens=65536).fits
