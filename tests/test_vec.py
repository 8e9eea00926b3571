"""mlrig.vec: each helper gives on arrays exactly what it gives on Python numbers."""

from __future__ import annotations

import numpy as np

from mlrig import vec


def test_round_to_is_pythons_round_element_by_element() -> None:
    rng = np.random.default_rng(7)
    halves = rng.integers(0, 10**7, 20_000) / 1e4 + 0.00005  # decimal halves, the cases numpy rounds otherwise
    xs = np.concatenate([rng.uniform(0, 200, 50_000), rng.uniform(0, 1e7, 20_000), halves,
                         np.array([0.0, 2.675, 0.125, 1e-9, 1.00005, 123456.78905])])
    assert (np.round(halves, 4) != [round(v, 4) for v in halves.tolist()]).any()  # numpy alone would differ
    for digits in (3, 4):
        assert vec.round_to(xs, digits).tolist() == [round(v, digits) for v in xs.tolist()]
    assert vec.round_to(2.675, 2) == round(2.675, 2) and isinstance(vec.round_to(1.5, 0), float)


def test_power_and_the_element_wise_twins_match_python() -> None:
    rng = np.random.default_rng(3)
    base, exp = rng.uniform(0.5, 1.0, 2000), rng.integers(1, 100_000, 2000)
    assert vec.power(0.875, exp).tolist() == [0.875 ** int(e) for e in exp.tolist()]
    assert vec.power(base, 3).tolist() == [b ** 3 for b in base.tolist()]
    a, b = rng.uniform(-5, 5, 500), rng.uniform(-5, 5, 500)
    assert vec.maximum(a, b).tolist() == [max(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert vec.minimum(a, 0.0).tolist() == [min(x, 0.0) for x in a.tolist()]
    assert vec.where(a > b, a, b).tolist() == vec.maximum(a, b).tolist()
    assert vec.ceil_int(a * 100).tolist() == [int(np.ceil(x * 100)) for x in a.tolist()]
    assert vec.trunc_int(a * 100).tolist() == [int(x * 100) for x in a.tolist()]
    # Python's floor division of floats, which the KV-pool formulas use, is numpy's too
    assert (np.abs(a) * 1e9 // 3.3).tolist() == [abs(x) * 1e9 // 3.3 for x in a.tolist()]
    # numbers stay numbers: `mlrig plan` never touches numpy
    assert type(vec.maximum(1, 2.5)) is float and vec.where(True, "a", "b") == "a" and vec.both(1, 0) is False


def test_power_of_one_base_over_repeated_exponents_is_pythons_per_element() -> None:
    """vec.power with one base works out each distinct exponent once (vec._distinct: a table by value for
    integers of a modest span, sorting otherwise); every element must still be Python's own `**`, in place."""
    rng = np.random.default_rng(11)
    batch, prompt = rng.integers(1, 257, 5000), rng.choice([1920, 3968, 8064, 32640], 5000)
    beyond_the_table = [np.array([1, 2**40, 5, 2**40, 1]), np.array([3, 1 << 25, 3])]
    cases = [batch, batch * prompt, (batch * prompt).reshape(50, 100), np.array([-3, 2, -3, 7, 2]),
             np.array([3, 1, 3, 250], np.uint8), np.array([-128, 0, -127, -128], np.int8), *beyond_the_table,
             np.array([7, 2**63 + 5, 7], np.uint64), batch * 0.37,
             np.array([1.0, np.nan, 3.0, np.nan, -0.0, 0.0, 3.0]), np.array([], np.int64), np.array(9)]
    for exp in cases:
        got = vec.power(0.9375, exp)
        want = np.array([0.9375 ** e for e in exp.ravel().tolist()], float).reshape(exp.shape)
        assert got.shape == exp.shape and np.array_equal(got, want, equal_nan=True)
    assert vec.power(2, np.array([1, 3])).tolist() == [2.0, 8.0]  # an int base as a float, as before


def test_where_of_labels_is_an_array_of_python_strings() -> None:
    """vec.where with a str side (a figure's `bound`) gives what the one-plan path gives per element: Python
    strings, in an object array (not numpy's fixed-width unicode), nested or mixed with an array of labels."""
    rng = np.random.default_rng(5)
    a, b = rng.random(1000) > 0.5, rng.random(1000) > 0.3
    got = vec.where(a, "interconnect", vec.where(b, "compute", "memory-bandwidth"))
    want = [("interconnect" if x else ("compute" if y else "memory-bandwidth")) for x, y in zip(a.tolist(), b.tolist(),
                                                                                            strict=True)]
    assert got.dtype == object and got.tolist() == want and all(type(v) is str for v in got.tolist())
    assert vec.where(b, "host", got).tolist() == ["host" if y else w for y, w in zip(b.tolist(), want, strict=True)]
    assert vec.where(False, "host", "compute") == "compute"
