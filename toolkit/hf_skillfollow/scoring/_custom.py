"""The `tests` grader of a maintainer's own tasks: test code read as inputs and expected outputs.

A task file is untrusted, and test code run beside the candidate would run in the candidate's
process, where a program can forge its outcome (docs/sandbox.md). So the tests are never
executed: they are parsed (`ast`) into calls of the entry point with literal arguments and a
literal expected result, one input per assert. The sandbox's trusted judge then calls the
candidate once per assert, in order, in one process, and judges each output outside the
candidate's process with that assert's own comparison (``Check``; ``_judge._assert_holds``),
so the verdict is the one running the asserts would give (docs/tasks.md, "tests"). The
expected outputs come through the usual reference path from a canonical solution generated
here from the literals alone (`repr` of `ast.literal_eval` values), so nothing the task
author wrote is ever executed.

Accepted statements (docs/tasks.md, "tests"): ``assert f(<literals>) == <literal>`` (either
side), ``assert f(<literals>)`` (truthy), ``assert not f(<literals>)`` (falsy), ``assert
abs(f(<literals>) - <literal>) < <tol>`` (or ``<=``, or the difference the other way round),
the same inside ``def check(candidate): ...`` with ``candidate`` for ``f``, plus imports, a
docstring, ``pass``, ``check(f)`` and a ``METADATA = ...`` assignment, which are ignored.
Anything else is refused with its line.
"""

from __future__ import annotations

import ast
import keyword
import math
from typing import Any

from hf_skillfollow._text import utf8_encodable

MAX_CASES = 1000
#: names the generated canonical solution defines itself
_RESERVED = frozenset({"_CASES", "_CALLS", "_same", "_builtins"})

#: How an assert compares the candidate's output ``out`` with its literal ``e`` (the judge's
#: ``_assert_holds``): ``==`` is ``out == e``, ``r==`` is ``e == out`` (the literal on the
#: left), ``truthy``/``falsy`` are ``assert f(...)``/``assert not f(...)``, and ``abs<``,
#: ``abs<=`` are ``abs(out - e) < t`` and ``<= t`` (``abs(e - out)`` when flipped).
Check = tuple[str, float, bool]  # (operator, tolerance or 0, flipped)


class UnsupportedTests(ValueError):
    """Test code outside the accepted form; the message names the line."""


def problem_from_tests(tests: str, entry_point: str | None) -> dict[str, Any]:
    """The EvalPlus-shaped problem (inputs, generated canonical solution, per-assert checks)
    of `tests`: one input per assert, in order, each judged by its own comparison."""
    try:
        module = ast.parse(tests)
    except SyntaxError as exc:
        raise UnsupportedTests(f"not valid Python (line {exc.lineno}: {exc.msg})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        # MemoryError: CPython's parser gives up on 50,000 nested unary minus signs that way
        reason = str(exc)[:120] or "nested too deep"
        raise UnsupportedTests(f"not valid Python ({reason})") from None
    cases: list[tuple[str, list[Any], Any, Check]] = []
    for node in module.body:
        _statement(node, cases, candidate=None)
        if len(cases) > MAX_CASES:
            raise UnsupportedTests(f"more than {MAX_CASES} asserts")
    if not cases:
        raise UnsupportedTests("no assert of the entry point found")
    names = {name for name, *_ in cases}
    if entry_point is None:
        if len(names) > 1 or names == {"candidate"}:
            raise UnsupportedTests(
                f"the asserts call {sorted(names)}: give the function under test as 'entry_point'"
            )
        entry_point = names.pop()
    elif names - {entry_point, "candidate"}:
        raise UnsupportedTests(
            f"the asserts call {sorted(names - {entry_point, 'candidate'})}, not {entry_point!r}"
        )
    if not entry_point.isidentifier() or keyword.iskeyword(entry_point):
        raise UnsupportedTests(f"entry point {entry_point!r} is not a Python identifier")
    if entry_point in _RESERVED:
        raise UnsupportedTests(
            f"entry point {entry_point!r} is reserved; name the function otherwise"
        )
    # One call per assert, in the asserts' order, in one process: as running them does (a
    # stateful or input-mutating candidate is called as often as the asserts call it).
    inputs = [args for _, args, _, _ in cases]
    outputs = [expected for _, _, expected, _ in cases]
    return {
        "entry_point": entry_point,
        "prompt": "",
        "canonical_solution": _canonical(entry_point, inputs, outputs),
        "base_input": inputs,
        "plus_input": [],
        "atol": 0,
        "checks": [list(check) for *_, check in cases],
        "tests": tests,
    }


def _statement(node: ast.stmt, cases: list, candidate: str | None) -> None:
    if isinstance(node, ast.Import | ast.ImportFrom | ast.Pass):
        return
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return  # a docstring
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and _name(node.value.func) == "check"
    ):
        return  # check(f): HumanEval's call of the check function
    if isinstance(node, ast.Assign) and [_name(t) for t in node.targets] == ["METADATA"]:
        return
    if isinstance(node, ast.FunctionDef) and node.name == "check" and candidate is None:
        params = [a.arg for a in node.args.args]
        if len(params) != 1:
            raise UnsupportedTests(
                f"line {node.lineno}: check() takes exactly one parameter (the candidate)"
            )
        for inner in node.body:
            _statement(inner, cases, candidate=params[0])
        return
    if isinstance(node, ast.Assert):
        cases.append(_case(node.test, node.lineno, candidate))
        return
    raise UnsupportedTests(
        f"line {node.lineno}: only asserts of the function under test with literal arguments "
        "and results are accepted (docs/tasks.md, 'tests'); the tests are never executed"
    )


def _case(test: ast.expr, line: int, candidate: str | None) -> tuple[str, list[Any], Any, Check]:
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        left, right = test.left, test.comparators[0]
        if isinstance(left, ast.Call):
            name, args = _call(left, line, candidate)
            return name, args, _literal(right, line), ("==", 0, False)
        if isinstance(right, ast.Call):
            name, args = _call(right, line, candidate)
            return name, args, _literal(left, line), ("r==", 0, False)
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Lt | ast.LtE)
    ):
        tolerance = _abs_difference(test.left, line, candidate)
        if tolerance is not None:
            name, args, expected, flipped = tolerance
            tol = _literal(test.comparators[0], line)
            if not isinstance(tol, int | float) or isinstance(tol, bool) or tol <= 0:
                raise UnsupportedTests(f"line {line}: the tolerance must be a positive number")
            op = "abs<" if isinstance(test.ops[0], ast.Lt) else "abs<="
            return name, args, expected, (op, tol, flipped)
    if isinstance(test, ast.Call):
        name, args = _call(test, line, candidate)
        return name, args, True, ("truthy", 0, False)
    if (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and isinstance(test.operand, ast.Call)
    ):
        name, args = _call(test.operand, line, candidate)
        return name, args, False, ("falsy", 0, False)
    raise UnsupportedTests(
        f"line {line}: assert form not accepted: use `assert f(...) == <literal>`, "
        "`assert f(...)`, `assert not f(...)` or `assert abs(f(...) - <literal>) < <tol>`"
    )


def _abs_difference(
    expr: ast.expr, line: int, candidate: str | None
) -> tuple[str, list[Any], Any, bool] | None:
    """(name, args, expected, flipped) of ``abs(f(...) - e)`` (flipped: ``abs(e - f(...))``)."""
    if not (isinstance(expr, ast.Call) and _name(expr.func) == "abs" and len(expr.args) == 1):
        return None
    inner = expr.args[0]
    if not (isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Sub)):
        return None
    flipped = not isinstance(inner.left, ast.Call)
    call, other = (inner.right, inner.left) if flipped else (inner.left, inner.right)
    if not isinstance(call, ast.Call):
        return None
    name, args = _call(call, line, candidate)
    return name, args, _literal(other, line), flipped


def _call(call: ast.Call, line: int, candidate: str | None) -> tuple[str, list[Any]]:
    name = _name(call.func)
    if name is None:
        raise UnsupportedTests(f"line {line}: call a function by its name")
    if candidate is not None and name != candidate:
        raise UnsupportedTests(f"line {line}: inside check(), call {candidate}(...)")
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        raise UnsupportedTests(f"line {line}: only positional literal arguments are accepted")
    args = [_literal(a, line) for a in call.args]
    return ("candidate" if candidate is not None else name), args


def _name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


#: Deepest nesting of a literal argument or result: the scorer's wire carries 200 levels
#: (`_wire.MAX_DEPTH`), with room for the cases and calls around each value.
MAX_LITERAL_DEPTH = 100


def _snippet(node: ast.expr) -> str:
    try:
        return repr(ast.unparse(node)[:80])
    except (ValueError, RecursionError, MemoryError):  # a 5,000-digit int, deep nesting
        return "the literal"


def _literal(node: ast.expr, line: int) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise UnsupportedTests(f"line {line}: {_snippet(node)} is not a literal") from None
    problem = _unfit(value)
    if problem is not None:
        raise UnsupportedTests(f"line {line}: {_snippet(node)} {problem}")
    return value


def _unfit(value: Any) -> str | None:
    """Why a literal cannot be an input or result, if it cannot: what the canonical solution
    (`repr`), the scoring key (JSON) and the wire carry is plain, finite, bounded data."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_LITERAL_DEPTH:
            return f"nests deeper than {MAX_LITERAL_DEPTH} levels"
        if isinstance(item, bytes) or item is Ellipsis:
            return f"holds {type(item).__name__} ({'...' if item is Ellipsis else 'b...'}), not plain data"
        if isinstance(item, float | complex) and not all(map(math.isfinite, _parts(item))):
            # `1e999` is a literal whose repr (`inf`) is not: the canonical solution would not load
            return "holds an infinite number"
        if isinstance(item, int):
            try:
                repr(item)
            except ValueError:
                return "holds an integer of more digits than Python writes out"
        if isinstance(item, str) and not utf8_encodable(item):
            return "holds a lone surrogate (\\ud800-\\udfff), not text"
        if isinstance(item, dict):
            stack.extend((x, depth + 1) for pair in item.items() for x in pair)
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend((x, depth + 1) for x in item)
    return None


def _parts(number: float | complex) -> tuple[float, ...]:
    return (number.real, number.imag) if isinstance(number, complex) else (number,)


# Builtins are reached through `_builtins`: an entry point named `len`, `list` or `type` is a
# module global here and would otherwise replace the builtin the lookup itself calls. The
# i-th call answers the i-th assert (its inputs are checked, by value and type, as a guard).
_SOLUTION = """
import builtins as _builtins

_CASES = {cases}
_CALLS = [0]


def _same(a, b):
    if _builtins.type(a) is not _builtins.type(b):
        return False
    if _builtins.isinstance(a, (_builtins.list, _builtins.tuple)):
        return _builtins.len(a) == _builtins.len(b) and _builtins.all(
            _same(x, y) for x, y in _builtins.zip(a, b)
        )
    if _builtins.isinstance(a, _builtins.dict):
        return a.keys() == b.keys() and _builtins.all(_same(a[k], b[k]) for k in a)
    return a == b


def {entry}(*args):
    i = _CALLS[0]
    _CALLS[0] = i + 1
    if i >= _builtins.len(_CASES) or not _same(_builtins.list(args), _CASES[i][0]):
        raise _builtins.LookupError("not the input of the next assert")
    return _CASES[i][1]
"""


def _canonical(entry: str, inputs: list[list[Any]], outputs: list[Any]) -> str:
    """A canonical solution returning each assert's literal result in turn; only literals'
    `repr`s."""
    return _SOLUTION.format(cases=repr(list(zip(inputs, outputs, strict=True))), entry=entry)


# --- the expectations grader ----------------------------------------------------------------


def blinded_view(task: Any, answer: str) -> Any:
    """What the judge may see of one answer: the task, its expected output and expectations."""
    from hf_skillfollow.judge import BlindedAnswer

    return BlindedAnswer(
        task.prompt,
        task.problem.get("expected_output"),
        tuple(task.problem["expectations"]),
        answer,
    )


async def judged_verdict(backend: Any, task: Any, answer: str, settings: Any) -> Any:
    """The verdict of the blinded judge on `answer` (majority of `settings.repeats`)."""
    from hf_skillfollow.judge import judge_answer
    from hf_skillfollow.scoring._verdict import Verdict

    if not answer.strip():
        # an arm that ended in an error has an empty answer (agent.final_answer): incorrect,
        # and never sent to the judge, which could find "(empty)" meets "contains no profanity"
        from hf_skillfollow.judge import unjudged

        n = len(task.problem["expectations"])
        judged = unjudged(settings, n, "empty answer: scored incorrect, not judged")
    else:
        judged = await judge_answer(backend, blinded_view(task, answer), settings)
    details = {
        "extracted": answer,
        "grading_failure": judged.failure is not None,
        # the statements themselves travel with their verdicts, so a reader of the traces
        # (the leaderboard's drill-down) sees what "e1: met" was about
        "judge_record": {**judged.record, "expectations": list(task.problem["expectations"])},
    }
    return Verdict(task.task_id, judged.passed, judged.reason, details)
