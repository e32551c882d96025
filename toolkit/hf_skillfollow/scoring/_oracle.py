"""EvalPlus's output comparison, run by the judging harness (``_judge``) one input at a time.

The special oracles and task lists are EvalPlus's own (``evalplus/eval/_special_oracle.py``),
loaded by file path so that the harness does not pay for ``evalplus.eval``'s package import
(numpy, psutil) on every candidate. ``matches`` follows the body of the per-input loop in
``evalplus.eval.unsafe_execute`` statement for statement, including its quirk that a float
expected output sets ``atol = 1e-6`` for the rest of the stage.
"""

from __future__ import annotations

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


def matches(dataset: str, entry_point: str, inp: Any, out: Any, exp: Any, atol: float) -> float:
    """Raise AssertionError (or whatever the comparison raises) unless ``out`` passes.

    Returns the ``atol`` to use for the next input of the same stage.
    """
    oracle = special_oracle()
    exact_match = out == exp
    if dataset == "mbpp":
        exact_match = _mbpp_special(oracle, entry_point, inp, out, exp, atol, exact_match)
    if dataset == "humaneval" and entry_point == "find_zero":
        assert abs(oracle._poly(*inp, out)) <= atol
        return atol
    if atol == 0 and is_floats(exp):
        atol = 1e-6  # enforce atol for float comparison (EvalPlus)
    if not exact_match and atol != 0:
        import numpy as np

        assert type(out) == type(exp)  # noqa: E721  (EvalPlus compares exact types)
        if isinstance(exp, list | tuple):
            assert len(out) == len(exp)
        assert np.allclose(out, exp, rtol=1e-07, atol=atol)
    else:
        assert exact_match
    return atol


def _mbpp_special(
    oracle: ModuleType, entry_point: str, inp: Any, out: Any, exp: Any, atol: float, exact: Any
) -> Any:
    if entry_point == "are_equivalent":  # Mbpp/164
        return exact or True
    if entry_point == "sum_div":  # Mbpp/295
        return exact or out == 0
    if entry_point == "surface_Area":  # Mbpp/581
        return exact or abs(out - oracle._surface_Area(*inp)) <= atol
    if entry_point == "digit_distance_nums":  # Mbpp/558
        return exact or out == oracle._digit_distance_nums(*inp)
    if entry_point in oracle.MBPP_OUTPUT_SET_EQ_TASKS:
        return set(out) == set(exp)
    if entry_point in oracle.MBPP_OUTPUT_NOT_NONE_TASKS:
        return out == exp if isinstance(out, bool) else exp == (out is not None)
    return exact
