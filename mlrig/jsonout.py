"""What every JSON output of mlrig goes through: the rounding rule of docs/PLAN-FORMAT.md ("Numbers in
JSON") and strictness (no NaN or Infinity). Plain functions on plain data, below the commands and the
batch runner that both use them."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel


def json_ready(obj: Any) -> Any:
    """Plain data with every NaN/infinite float replaced by None: RFC 8259 JSON has no NaN or Infinity,
    and a reader that is strict about it must never meet one in mlrig's output."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_ready(x) for x in obj]
    return obj


SIGNIFICANT_DIGITS = 4
GIB_DECIMALS = 3
UNROUNDED_KEYS = frozenset({"tokens_to_train"})  # the user's own figure, echoed as given


def _float_rule(key: str) -> int:
    """How `round_floats` treats a float under `key`: 0 as it is, 1 to GIB_DECIMALS, 2 to
    SIGNIFICANT_DIGITS (worked out once per key: a batch rounds the same few keys many times)."""
    rule = _RULES.get(key)
    if rule is None:
        rule = _RULES[key] = 0 if (key in UNROUNDED_KEYS or "bytes" in key) else 1 if key.endswith("_gib") else 2
    return rule


_RULES: dict[str, int] = {}


def _round_float(x: float, key: str) -> float:
    """(0, NaN and the infinities come through both roundings as they are.)"""
    rule = _RULES.get(key)
    if rule is None:
        rule = _float_rule(key)
    if rule == 2:
        return float(format(x, _SIGNIFICANT))
    return round(x, GIB_DECIMALS) if rule == 1 else x


_SIGNIFICANT = f".{SIGNIFICANT_DIGITS}g"
_PLAIN = frozenset({str, int, bool, type(None)})
# x -> x rounded by rule 2 / rule 1: a batch rounds the same few values (capacities, weights, error
# bands) on line after line, and a lookup costs a fraction of formatting. 0.0 and -0.0 are one key, so
# zeros are never stored; a memo that grows past MEMO_SIZE starts again.
_MEMO: tuple[dict[float, float], dict[float, float]] = ({}, {})
MEMO_SIZE = 100_000
_BY_RULE: tuple[dict[float, float], ...] = ({}, *_MEMO)  # rule (1, 2) -> its memo


def _rounded(v: float, rule: int) -> float:
    """`v` by rule 1 (GIB_DECIMALS) or 2 (SIGNIFICANT_DIGITS), through the memo."""
    memo = _MEMO[rule - 1]
    r = memo.get(v)
    if r is None or not v:
        r = float(format(v, _SIGNIFICANT)) if rule == 2 else round(v, GIB_DECIMALS)
        if v:
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            memo[v] = r
    return r


def round_floats(obj: Any, key: str = "") -> Any:
    """The JSON rounding rule (docs/PLAN-FORMAT.md, "Numbers in JSON"): a float under a key ending in
    `_gib` keeps 3 decimals (1 MiB); any other float keeps 4 significant digits (the estimates are good
    to a few percent at best) except the user's own `tokens_to_train` and byte counts (keys naming
    `bytes`, exact sizes from the architecture); integers, booleans and strings are untouched.
    Deterministic, so `mlrig eval` prints the same bytes for the same input. Plain JSON data (what
    model_dump gives) takes the fast branches (`mlrig eval` rounds ~30 floats a line); anything else
    (tuples, float subclasses) the general one."""
    t = type(obj)
    if t is dict:
        out = {}
        rules = _RULES
        by_rule = _BY_RULE
        for k, v in obj.items():
            tv = type(v)
            if tv is float and type(k) is str:
                rule = rules.get(k)
                if rule is None:
                    rule = _float_rule(k)
                if rule:  # the memo looked up here, `_rounded` only on a miss (a zero never hits)
                    r = by_rule[rule].get(v)
                    out[k] = _rounded(v, rule) if r is None else r
                else:
                    out[k] = v
            elif tv in _PLAIN:
                out[k] = v
            else:
                out[k] = round_floats(v, k if type(k) is str else str(k))
        return out
    if t is list:
        return [v if type(v) in _PLAIN else round_floats(v, key) for v in obj]
    if isinstance(obj, float):
        return _round_float(obj, key)
    if isinstance(obj, dict):
        return {k: round_floats(v, str(k)) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [round_floats(v, key) for v in obj]
    return obj


def rounded_dump(model: BaseModel) -> dict[str, Any]:
    """`round_floats(model.model_dump(mode="json"))` for mlrig's result models (mlrig/results.py), in one
    walk over the models' own values rather than a dump and then a rounding pass over it: fields of
    plain JSON values, of nested models, of lists and dicts of plain values (notes, error bands) and of
    dicts of models (validation), in field order. A float is rounded by its own key as `round_floats`
    rounds it; a NaN or an infinity stays one (the dump writes null for it, and so do the JSON encoders
    mlrig uses). A frozen model (a validation entry, shared by every plan of its scope) is walked once
    per object and its dict shared: encode the result, do not change it."""
    if _is_frozen(type(model)):
        hit = _FROZEN.get(id(model))
        if hit is not None and hit[0] is model:
            return hit[1]
        if len(_FROZEN) >= 4096:  # objects made outside a shared table: keep the memo bounded
            _FROZEN.clear()
        plain = _walk(model)
        _FROZEN[id(model)] = (model, plain)
        return plain
    return _walk(model)


def _walk(model: BaseModel) -> dict[str, Any]:
    values = model.__dict__
    rules, by_rule = _RULES, _BY_RULE
    out: dict[str, Any] = {}
    for k in _field_names(type(model)):
        v = values[k]
        tv: type = type(v)
        if tv is float:
            rule = rules.get(k)
            if rule is None:
                rule = _float_rule(k)
            if rule:  # as in round_floats
                r = by_rule[rule].get(v)
                out[k] = _rounded(v, rule) if r is None else r
            else:
                out[k] = v
        elif tv in _PLAIN:
            out[k] = v
        elif _is_model(tv):
            out[k] = rounded_dump(v)
        elif tv is dict and v and _is_model(_first_value_type(v)):  # validation
            out[k] = {name: rounded_dump(x) for name, x in v.items()}
        else:
            out[k] = round_floats(v, k)
    return out


def _first_value_type(d: dict[Any, Any]) -> type:
    return type(next(iter(d.values())))


@functools.cache
def _field_names(cls: type[BaseModel]) -> tuple[str, ...]:
    return tuple(cls.model_fields)


@functools.cache
def _is_model(cls: type) -> bool:
    from pydantic import BaseModel

    return issubclass(cls, BaseModel)


@functools.cache
def _is_frozen(cls: type[BaseModel]) -> bool:
    return bool(cls.model_config.get("frozen"))


# id(frozen model) -> (the model, its rounded dump); the model is held, so its id stays its own
_FROZEN: dict[int, tuple[BaseModel, dict[str, Any]]] = {}
