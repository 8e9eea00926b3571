"""`ModelArch.params()` is cached per shape: a changed arch must never get a stale count."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from mlrig.catalog.arch import PARAMS_KEY_EXCLUDED, ModelArch
from mlrig.catalog.params import param_breakdown
from mlrig.catalog.readers.hf_config import arch_from_hf_config

CATALOG = sorted((Path(__file__).resolve().parent.parent / "mlrig" / "data" / "models").glob("*.json"))


def _arch(path: Path) -> ModelArch:
    cfg = json.loads(path.read_text())
    return arch_from_hf_config(cfg, model_id=cfg["_model_id"], hf_id=cfg["_hf_repo"], source=cfg["_source"])


LLAMA_8B = dict(hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8, intermediate_size=14336,
                vocab_size=128256)


def test_copy_with_changed_fields_is_counted_afresh() -> None:
    arch = ModelArch(**LLAMA_8B)
    assert arch.params().total == 8_030_261_248  # Llama 3.1 8B, hand-checked in test_params_catalog
    half = arch.model_copy(update={"num_layers": 16})
    # 16 fewer layers of (attention 4096*(4096+2*1024+4096) + MLP 3*4096*14336 + 2 norms of 4096)
    per_layer = 4096 * (4096 + 2 * 1024 + 4096) + 3 * 4096 * 14336 + 2 * 4096
    assert half.params().total == 8_030_261_248 - 16 * per_layer
    assert arch.params().total == 8_030_261_248  # the original keeps its own count
    tied = arch.model_copy(update={"tie_word_embeddings": True})
    assert tied.params().total == 8_030_261_248 - 128256 * 4096


def test_in_place_change_is_counted_afresh() -> None:
    """Readers set fields on an arch after building it (mlrig/catalog/hub.py, readers/__init__.py)."""
    arch = ModelArch(**LLAMA_8B)
    before = arch.params()
    arch.num_experts, arch.experts_per_token = 8, 2
    assert arch.params().experts_routed > 0
    assert arch.params() != before
    assert arch.params() == param_breakdown(arch)


@pytest.mark.parametrize("path", CATALOG[::3], ids=lambda p: p.stem)
def test_random_changes_match_an_uncached_count(path: Path) -> None:
    """Any field changed (by copy or in place) gives what `param_breakdown` computes directly."""
    rng = random.Random(path.stem)
    base = _arch(path)
    assert base.params() == param_breakdown(base)
    ints = [n for n, f in ModelArch.model_fields.items() if f.annotation in (int, "int")
            and n not in ("num_kv_heads", "head_dim")]
    bools = [n for n, f in ModelArch.model_fields.items() if f.annotation in (bool, "bool")]
    assert len(ints) > 8 and len(bools) > 5
    for _ in range(40):
        field = rng.choice(ints + bools)
        value: Any = (not getattr(base, field)) if field in bools else getattr(base, field) + rng.randint(1, 3)
        copy = base.model_copy(update={field: value})
        assert copy.params() == param_breakdown(copy), field
        inplace = base.model_copy()
        setattr(inplace, field, value)
        assert inplace.params() == param_breakdown(inplace), field
    assert base.params() == param_breakdown(base)


class _Untouchable(list):  # type: ignore[type-arg]
    """Raises on any use, to prove the count never reads a field the cache key leaves out."""

    def _boom(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("param_breakdown read a field the params() cache key leaves out")

    __iter__ = __len__ = __getitem__ = __eq__ = __bool__ = __contains__ = _boom  # type: ignore[assignment]
    keys = values = items = get = _boom


def test_fields_left_out_of_the_key_are_not_read_by_the_count() -> None:
    arch = ModelArch(**LLAMA_8B)
    expected = param_breakdown(arch)
    for name in PARAMS_KEY_EXCLUDED:
        arch.__dict__[name] = _Untouchable()
    assert param_breakdown(arch) == expected


@pytest.mark.parametrize("path", CATALOG[::2], ids=lambda p: p.stem)
def test_detached_copy_is_a_deep_copy(path: Path) -> None:
    """`detached_copy` (what `resolve_model` hands out) equals `model_copy(deep=True)` and shares no
    container with the catalog's object."""
    arch = _arch(path)
    arch.notes.append("a note")
    arch.weight_bytes_by_dtype = {"BF16": 123}
    deep, twin = arch.model_copy(deep=True), arch.detached_copy()
    assert twin == deep and twin.model_fields_set == deep.model_fields_set
    assert twin.model_dump() == deep.model_dump()
    twin.notes.append("only the copy")
    twin.weight_bytes_by_dtype["F32"] = 1
    assert arch.notes[-1] == "a note" and "F32" not in arch.weight_bytes_by_dtype
    twin.model_fields_set.add("name")
    assert "name" not in arch.model_fields_set or "name" in deep.model_fields_set


def test_detached_copy_copies_nested_containers() -> None:
    arch = ModelArch(**LLAMA_8B)
    nested: list[Any] = [["inner"]]
    arch.__dict__["notes"] = nested
    twin = arch.detached_copy()
    twin.notes[0].append("changed")
    assert nested == [["inner"]]
