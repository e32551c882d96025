"""The verifier of an exported `tests` task: run inside the Harbor environment as ``tests/verify.py``.

`tasks export-harbor` (``_export``) copies this file verbatim into every exported task; the
task's own data (inputs, expected results, each assert's comparison) are in ``inputs.json``
and ``expected.json`` beside it, never in code. Stdlib only, for any ``python3`` ≥ 3.9 in
the environment, no network.

``python3 verify.py TESTS_DIR SOLUTION LOG_DIR`` is the judge, as in the chat loop's `tests`
grader (docs/tasks.md): it reads the expected results and removes their file, then starts the
candidate in a separate process (``--serve``, its own session, CPU/file/time limits) that
loads ``SOLUTION`` and calls the entry point once per assert, in the asserts' order, with
fresh copies of the literal arguments, and sends each output back as tagged plain data. The
judge decodes each output (bounded, plain data only: no class of the candidate's crosses)
and judges every assert by its own comparison: ``==`` exact, ``r==`` with the literal first,
the truth value, its falsity, ``abs(out - e) < t`` or ``<= t``. It writes
``LOG_DIR/asserts.json`` (one verdict per assert) and then ``LOG_DIR/reward.txt``: 1 when
every assert holds, else 0 (Harbor reads ``reward.txt`` when no ``reward.json`` exists; a
``reward.json`` left by the candidate is removed).
"""

from __future__ import annotations

import ast
import collections
import contextlib
import ctypes
import decimal
import fractions
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import Any

#: the candidate's whole run (load and every call): wall and CPU seconds
WALL_S = 60
#: the candidate's output stream, all outputs together
OUTPUT_BYTES = 64 * 1024 * 1024
#: the task's own data files
DATA_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 200
MAX_ELEMENTS = 1_000_000


class NotPlain(Exception):
    """An output that is not plain data: it cannot cross to the judge, and fails its assert."""


# --- the candidate's side ------------------------------------------------------------------


def _encode(value: Any, depth: int = 0, count: list[int] | None = None) -> list[Any]:
    """``value`` as tagged JSON; only plain data (as the chat loop's grader carries)."""
    count = count if count is not None else [0]
    count[0] += 1
    if depth > MAX_DEPTH or count[0] > MAX_ELEMENTS:
        raise NotPlain("output nests too deep or holds too many elements")
    kind = type(value)
    if value is None:
        return ["N"]
    if kind is bool:
        return ["b", value]
    if kind is int:
        return ["i", hex(value)]  # hex: no digit limit, exact
    if kind is float:
        return ["f", value.hex()]
    if kind is complex:
        return ["c", value.real.hex(), value.imag.hex()]
    if kind is str:
        return ["s", value]
    if kind is bytes:
        return ["y", value.hex()]
    if kind is decimal.Decimal:
        return ["D", str(value)]
    if kind is fractions.Fraction:
        return ["Q", hex(value.numerator), hex(value.denominator)]
    if kind is list or kind is tuple or (issubclass(kind, tuple) and hasattr(kind, "_fields")):
        tag = "l" if kind is list else "t"  # a namedtuple compares as a tuple
        return [tag, [_encode(x, depth + 1, count) for x in value]]
    if kind is set or kind is frozenset:
        return ["S" if kind is set else "F", [_encode(x, depth + 1, count) for x in value]]
    if kind is collections.Counter:
        return ["C", [[_encode(k, depth + 1, count), _encode(v, depth + 1, count)]
                      for k, v in value.items()]]  # fmt: skip
    if kind in (dict, collections.OrderedDict, collections.defaultdict):
        return ["d", [[_encode(k, depth + 1, count), _encode(v, depth + 1, count)]
                      for k, v in value.items()]]  # fmt: skip
    # a numpy scalar: its plain value, as the chat loop's grader carries it
    if kind.__module__ == "numpy" and getattr(value, "shape", None) == ():
        item = value.item()
        if type(item) in (bool, int, float, complex):
            return _encode(item, depth, count)
    raise NotPlain(f"an output of type {kind.__name__!r} is not plain data")


def serve(solution: str) -> None:
    """The candidate's process: load ``solution``, call its entry point per input line."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the candidate prints goes to stderr, never into the outputs
    request = json.loads(sys.stdin.read(DATA_BYTES))
    entry, inputs = request["entry_point"], request["inputs"]
    sys.path.insert(0, os.path.dirname(os.path.abspath(solution)))
    try:
        spec = importlib.util.spec_from_file_location("solution", solution)
        module = importlib.util.module_from_spec(spec)
        sys.modules["solution"] = module
        spec.loader.exec_module(module)
        function = getattr(module, entry)
    except BaseException as exc:  # noqa: BLE001 - any failure to load is the candidate's
        out.write(json.dumps({"load_error": _describe(exc)}) + "\n")
        out.flush()
        return
    out.write(json.dumps({"loaded": True}) + "\n")
    out.flush()
    for text in inputs:
        args = ast.literal_eval(text)  # a fresh copy of the literal arguments for each call
        try:
            line = {"ok": _encode(function(*args))}
        except NotPlain as exc:
            line = {"err": str(exc)}
        except BaseException as exc:  # noqa: BLE001
            line = {"err": "raised " + _describe(exc)}
        try:
            text_line = json.dumps(line)
        except (ValueError, RecursionError):
            text_line = json.dumps({"err": "output could not be written as plain data"})
        out.write(text_line + "\n")
        out.flush()


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def _limit_candidate() -> None:
    import resource

    # SIGXCPU at the wall limit, SIGKILL a second later: a loop ended by the CPU limit
    # before the wall timer fires still reads as a timeout, never as a bare kill
    resource.setrlimit(resource.RLIMIT_CPU, (WALL_S, WALL_S + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_BYTES, OUTPUT_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# --- the judge's side ------------------------------------------------------------------------


def _decode(tree: Any, depth: int = 0) -> Any:
    """A decoded output: built from the tags only, never by calling anything of the candidate's."""
    if depth > MAX_DEPTH or not isinstance(tree, list) or not tree or type(tree[0]) is not str:
        raise ValueError("malformed output")
    tag, rest = tree[0], tree[1:]
    if tag == "N":
        return None
    if tag == "b" and type(rest[0]) is bool:
        return rest[0]
    if tag == "i":
        return int(rest[0], 16)
    if tag == "f":
        return float.fromhex(rest[0])
    if tag == "c":
        return complex(float.fromhex(rest[0]), float.fromhex(rest[1]))
    if tag == "s" and type(rest[0]) is str:
        return rest[0]
    if tag == "y":
        return bytes.fromhex(rest[0])
    if tag == "D":
        return decimal.Decimal(rest[0])
    if tag == "Q":
        return fractions.Fraction(int(rest[0], 16), int(rest[1], 16))
    if tag in ("l", "t", "S", "F") and type(rest[0]) is list:
        items = [_decode(x, depth + 1) for x in rest[0]]
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
    if tag in ("d", "C") and type(rest[0]) is list:
        pairs = [(_decode(k, depth + 1), _decode(v, depth + 1)) for k, v in rest[0]]
        return collections.Counter(dict(pairs)) if tag == "C" else dict(pairs)
    raise ValueError(f"malformed output (tag {tag[:10]!r})")


def holds(op: str, tol: Any, flipped: bool, out: Any, expected: Any) -> bool:
    """Whether one assert holds for output ``out``: the comparison it states, no other."""
    if op == "truthy":
        return bool(out)
    if op == "falsy":
        return not out
    if op == "==":
        return bool(out == expected)
    if op == "r==":
        return bool(expected == out)
    diff = abs(expected - out) if flipped else abs(out - expected)
    return bool(diff < tol) if op == "abs<" else bool(diff <= tol)


def _read(path: str) -> Any:
    with open(path, "rb") as fh:
        blob = fh.read(DATA_BYTES + 1)
    if len(blob) > DATA_BYTES:
        raise ValueError(f"{path}: over {DATA_BYTES} bytes")
    return json.loads(blob.decode("utf-8"))


def _run_candidate(
    tests_dir: str, solution: str, entry: str, inputs: list[str]
) -> tuple[list[str], bool]:
    """The candidate's output lines (at most ``OUTPUT_BYTES``) and whether it ran out of time."""
    request = json.dumps({"entry_point": entry, "inputs": inputs}).encode()
    script = os.path.join(os.path.abspath(tests_dir), "verify.py")
    solution = os.path.abspath(solution)
    with tempfile.TemporaryFile() as sink, tempfile.TemporaryFile() as feed, \
            tempfile.TemporaryFile() as errors:  # fmt: skip
        feed.write(request)
        feed.seek(0)
        proc = subprocess.Popen(
            [sys.executable, "-I", script, "--serve", solution],
            stdin=feed, stdout=sink, stderr=errors,
            cwd=os.path.dirname(os.path.abspath(solution)), start_new_session=True,
            preexec_fn=_limit_candidate,
        )  # fmt: skip
        timed_out = False
        try:
            proc.wait(timeout=WALL_S)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # whatever the candidate left running in its session goes with it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        sink.seek(0)
        text = sink.read(OUTPUT_BYTES).decode("utf-8", "replace")
        errors.seek(max(0, errors.seek(0, os.SEEK_END) - 400))
        tail = errors.read(400).decode("utf-8", "replace")
    timed_out = timed_out or proc.returncode == -signal.SIGXCPU
    lines = text.splitlines()
    if not lines:  # it ended before loading the solution: say how
        ended = "timed out" if timed_out else f"exit status {proc.returncode}"
        lines = [json.dumps({"load_error": f"the candidate process ended ({ended}): {tail}"})]
    return lines, timed_out


def judge(tests_dir: str, solution: str, log_dir: str) -> int:
    """Every assert's verdict, written to ``log_dir``; the reward (1 or 0)."""
    _not_dumpable()
    expected_path = os.path.join(tests_dir, "expected.json")
    checks = _read(expected_path)
    with contextlib.suppress(OSError):  # the candidate must not find them on disk
        os.unlink(expected_path)
    request = _read(os.path.join(tests_dir, "inputs.json"))
    inputs = request["inputs"]
    if not os.path.isfile(solution):
        lines, timed_out = [json.dumps({"load_error": f"no file {solution}"})], False
    else:
        lines, timed_out = _run_candidate(tests_dir, solution, request["entry_point"], inputs)
    verdicts = _verdicts(checks, lines, timed_out)
    reward = 1 if verdicts and all(v["passed"] for v in verdicts) else 0
    os.makedirs(log_dir, exist_ok=True)
    with open(os.path.join(log_dir, "asserts.json"), "w", encoding="utf-8") as fh:
        json.dump(verdicts, fh, indent=1)
    with contextlib.suppress(OSError):  # Harbor prefers reward.json: only ours counts
        os.unlink(os.path.join(log_dir, "reward.json"))
    with open(os.path.join(log_dir, "reward.txt"), "w", encoding="utf-8") as fh:
        fh.write(f"{reward}\n")
    return reward


def _verdicts(checks: list[dict], lines: list[str], timed_out: bool) -> list[dict]:
    head = _line(lines[0]) if lines else None
    verdicts = []
    for i, check in enumerate(checks):
        verdict = {"assert": i + 1, "line": check["line"], "passed": False}
        if head is None or "load_error" in head:
            verdict["reason"] = (
                "solution failed to load: "
                + str((head or {}).get("load_error", "the candidate process ended"))[:400]
            )
        elif i + 1 >= len(lines):
            verdict["reason"] = "timeout" if timed_out else "not reached: the candidate ended"
        else:
            # an output far larger than its expected result is not decoded (as in the grader)
            limit = max(1 << 20, 64 * len(check["expected"]))
            too_large = len(lines[i + 1]) > limit
            line = {"err": "output too large"} if too_large else _line(lines[i + 1])
            verdict.update(_one(check, line))
        verdicts.append(verdict)
    return verdicts


def _line(text: str) -> dict:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {"err": "malformed output line"}
    return data if isinstance(data, dict) else {"err": "malformed output line"}


def _one(check: dict, line: dict) -> dict:
    if "ok" not in line:
        return {"reason": str(line.get("err", "malformed output line"))[:400]}
    try:
        out = _decode(line["ok"])
    except (ValueError, TypeError, IndexError, KeyError, RecursionError, ArithmeticError):
        return {"reason": "malformed output"}
    tol = ast.literal_eval(check["tol"])
    expected = ast.literal_eval(check["expected"])
    try:
        passed = holds(check["op"], tol, check["flipped"], out, expected)
    except Exception as exc:  # noqa: BLE001 - e.g. abs() of a string: the assert fails
        return {"reason": "comparison raised " + _describe(exc)}
    return {"passed": True} if passed else {"reason": "wrong output"}


def _not_dumpable() -> None:
    """Keep the candidate (same uid) from reading the judge's memory (Linux; best effort)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "--serve":
        serve(argv[2])
        return 0
    if len(argv) != 4:
        sys.stderr.write("usage: verify.py TESTS_DIR SOLUTION LOG_DIR\n")
        return 2
    print(f"reward {judge(argv[1], argv[2], argv[3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
