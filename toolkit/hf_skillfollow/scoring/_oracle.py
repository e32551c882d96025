"""EvalPlus's output comparison, run by the judging harness (``_judge``) one input at a time.

The special oracles and task lists are EvalPlus's own (``evalplus/eval/_special_oracle.py``),
loaded by file path so that the harness does not pay for ``evalplus.eval``'s package import
(numpy, psutil) on every candidate. ``matches`` follows the body of the per-input loop in
``evalplus.eval.unsafe_execute`` statement for statement, including its quirk that a float
expected output sets ``atol = 1e-6`` for the rest of the stage, except where it is
deliberately stricter (docs/sandbox.md, "Where this scorer is stricter than EvalPlus 0.3.1"):
an output needs the expected output's structure before any tolerance (``same_structure``),
and the special oracles check the output's type and accept only correct values.
"""

from __future__ import annotations

import collections
import importlib.util
import sys
from functools import cache
from types import ModuleType
from typing import Any


@cache
def special_oracle() -> ModuleType:
    spec = importlib.util.find_spec("evalplus")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("evalplus is not installed")
    path = f"{next(iter(spec.submodule_search_locations))}/eval/_special_oracle.py"
    module_spec = importlib.util.spec_from_file_location("_evalplus_special_oracle", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


_MBPP_SPECIAL = ("are_equivalent", "sum_div", "surface_Area", "digit_distance_nums")


def has_special_oracle(dataset: str, entry_point: str) -> bool:
    """Whether EvalPlus replaces plain equality for this task (``matches`` below)."""
    if dataset == "humaneval":
        return entry_point == "find_zero"
    oracle = special_oracle()
    return entry_point in (
        *_MBPP_SPECIAL,
        *oracle.MBPP_OUTPUT_SET_EQ_TASKS,
        *oracle.MBPP_OUTPUT_NOT_NONE_TASKS,
    )


def is_floats(x: Any) -> bool:
    """``evalplus.eval.is_floats`` without importing numpy unless the program already did."""
    if isinstance(x, float):
        return True
    if isinstance(x, list | tuple) and x:
        return all(isinstance(i, float) for i in x)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray):
        return x.dtype == np.float64 or x.dtype == np.float32
    return False


class WrongOutput(AssertionError):
    """The output has not the structure or type the task's expected output has."""


class Match:
    """Stands for a regular-expression match that the program returned for one of EvalPlus's
    not-None tasks (only its existence is checked; the object does not cross the pipe)."""


def matches(dataset: str, entry_point: str, inp: Any, out: Any, exp: Any, atol: float) -> float:
    """Raise AssertionError (or whatever the comparison raises) unless ``out`` passes.

    EvalPlus's loop, with two deliberate differences (docs/sandbox.md): the special oracles
    check the output's type and accept only what is correct (``_STRICT``), and a comparison
    with a tolerance needs the expected output's structure (``same_structure``).
    Returns the ``atol`` to use for the next input of the same stage.
    """
    oracle = special_oracle()
    if dataset == "humaneval" and entry_point == "find_zero":
        _expect(_is_real(out), "not a number")
        assert abs(oracle._poly(*inp, out)) <= atol
        return atol
    special = _STRICT.get(entry_point) if dataset == "mbpp" else None
    if special is None and dataset == "mbpp":
        if entry_point in oracle.MBPP_OUTPUT_SET_EQ_TASKS:
            special = _set_equal
        elif entry_point in oracle.MBPP_OUTPUT_NOT_NONE_TASKS:
            special = _not_none
    exact_match = out == exp if special is None else special(oracle, inp, out, exp, atol)
    if atol == 0 and is_floats(exp):
        atol = 1e-6  # enforce atol for float comparison (EvalPlus)
    if type(exact_match) is not bool and not isinstance(exact_match, _np_bool()):
        # ``out == exp`` built an array (numpy in the output): its truth value would say
        # nothing about shape, so the structure decides first
        _expect(same_structure(out, exp), "its structure differs from the expected output's")
    if not exact_match and atol != 0:
        import numpy as np

        assert type(out) == type(exp)  # noqa: E721  (EvalPlus compares exact types)
        if isinstance(exp, list | tuple):
            assert len(out) == len(exp)
        # np.allclose broadcasts: a (n, 1, 0) array against n floats is "all close"
        _expect(same_structure(out, exp), "its structure differs from the expected output's")
        assert np.allclose(out, exp, rtol=1e-07, atol=atol)
    else:
        assert exact_match
    return atol


def same_structure(out: Any, exp: Any) -> bool:
    """Whether ``out`` has the expected output's structure, element by element: a list or
    tuple of the same length where ``exp`` has a list or tuple (either kind below the top,
    whose exact type EvalPlus checks), a numpy array of the same shape where it has an array,
    and elsewhere a value that is neither (a 0-d array counts as a scalar)."""
    np = sys.modules.get("numpy")
    stack = [(out, exp)]
    while stack:
        o, e = stack.pop()
        if isinstance(e, list | tuple):
            if not isinstance(o, list | tuple) or len(o) != len(e):
                return False
            stack.extend(zip(o, e, strict=True))
        elif np is not None and isinstance(e, np.ndarray):
            if not isinstance(o, np.ndarray) or o.shape != e.shape:
                return False
        elif isinstance(o, list | tuple) or (
            np is not None and isinstance(o, np.ndarray) and o.ndim != 0
        ):
            return False
    return True


def _np_bool() -> type | tuple[type, ...]:
    np = sys.modules.get("numpy")
    return () if np is None else np.bool_


def _expect(condition: bool, why: str) -> None:
    if not condition:
        raise WrongOutput(why)


def _is_real(x: Any) -> bool:
    """An int or float (numpy's too), not a bool, an array or a complex."""
    if type(x) in (int, float):
        return True
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.integer | np.floating)


def _is_int(x: Any) -> bool:
    np = sys.modules.get("numpy")
    return type(x) is int or (np is not None and isinstance(x, np.integer))


# --- EvalPlus's MBPP+ special oracles, made strict --------------------------------------------
# EvalPlus 0.3.1 accepts any output for Mbpp/164 (``exact or True``) and 0 for any input of
# Mbpp/295 (``exact or out == 0``), and checks no type anywhere. Here each one requires the
# expected output's type and accepts only values that are correct where the canonical
# solution is well defined (docs/sandbox.md lists each task and why).


def _divisor_sum(n: int) -> int:
    total, i = 0, 1
    while i * i <= n:
        if n % i == 0:
            total += i if i * i == n else i + n // i
        i += 1
    return total


def _are_equivalent(oracle: ModuleType, inp: Any, out: Any, exp: Any, atol: float) -> bool:
    # Mbpp/164 "determine if the sum of the divisors of two integers are the same": the
    # canonical solution sums all divisors, MBPP's own test (23, 47 -> True) sums the proper
    # ones. Where the two readings disagree either bool is right; elsewhere only the answer.
    _expect(type(out) is bool, "not a bool")
    if out == exp:
        return True
    a, b = inp
    if not all(type(x) in (int, bool) and x >= 1 for x in (a, b)):
        return True  # divisors of 0 or of a negative number: not well defined
    sa, sb = _divisor_sum(a), _divisor_sum(b)
    return (sa == sb) != (sa - a == sb - b)


def _sum_div(oracle: ModuleType, inp: Any, out: Any, exp: Any, atol: float) -> bool:
    # Mbpp/295: a number, equal to the canonical sum of divisors (EvalPlus's ``or out == 0``
    # is the canonical's own answer where there are no divisors to sum, n < 1)
    _expect(_is_real(out), "not a number")
    return bool(out == exp)


def _surface_area(oracle: ModuleType, inp: Any, out: Any, exp: Any, atol: float) -> bool:
    # Mbpp/581: a number; the canonical's formula (height as slant height) or EvalPlus's
    # (height as perpendicular height, rounded)
    _expect(_is_real(out), "not a number")
    return bool(out == exp or abs(out - oracle._surface_Area(*inp)) <= atol)


def _digit_distance(oracle: ModuleType, inp: Any, out: Any, exp: Any, atol: float) -> bool:
    # Mbpp/558: an integer; the canonical's answer (digits zipped from the left) or
    # EvalPlus's (the shorter number padded with zeros)
    _expect(_is_int(out), "not an int")
    return bool(out == exp or out == oracle._digit_distance_nums(*inp))


_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
_COLLECTIONS = (list, tuple, set, frozenset, collections.deque, *_VIEWS)


def _set_equal(oracle: ModuleType, inp: Any, out: Any, exp: Any, atol: float) -> bool:
    # MBPP tasks whose own tests compare ``set(out)``: a collection of the expected elements
    # in any order (an iterator arrives as its elements: ``_judge``); not a string, a dict
    # (whose set is its keys) or a number
    _expect(type(out) in _COLLECTIONS, "not a collection of elements")
    return set(out) == set(exp)


def _not_none(oracle: ModuleType, inp: Any, out: Any, exp: Any, atol: float) -> bool:
    # regular-expression tasks (the canonical returns a match or None; ``exp`` is whether it
    # was not None): a match, None or a bool, not any other value that is "not None"
    if type(out) is bool:
        return out == exp
    _expect(out is None or type(out) is Match, "not a regular-expression match, None or a bool")
    return exp == (out is not None)


_STRICT = {
    "are_equivalent": _are_equivalent,  # Mbpp/164
    "sum_div": _sum_div,  # Mbpp/295
    "surface_Area": _surface_area,  # Mbpp/581
    "digit_distance_nums": _digit_distance,  # Mbpp/558
}
