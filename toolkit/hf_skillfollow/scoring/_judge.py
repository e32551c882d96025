"""The trusted side of the sandbox: fork the program's process, then judge what it sends.

Runs in the confined harness, which is not dumpable, so the program (same uid, no
capabilities) can neither ptrace it nor read its memory or descriptors. The expected outputs
are read from the data file only after the fork: the program's process never has them. Every
comparison (EvalPlus's, special oracles, ``atol``) happens here, on outputs decoded by
``_wire.decode`` (bounded, plain data only), or, for an output over ``_wire.DIGEST_ABOVE``
bytes, on the program's commitment to its length and sha256 where that is exactly the expected
output's (``_revealed``), and only this process writes the verdict.
Reasons are the judge's own: a timeout is reported only when the program's process really
used up its CPU budget, whatever the program printed, raised or signalled.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import mmap
import os
import pickle
import time
from typing import Any

from hf_skillfollow.scoring import _child, _wire

#: the expected outputs' index (lengths and flags) is at most this long
_INDEX_LIMIT = 1 << 30
#: a message that is not an output (stage loaded, error text, flag) is at most this long
_SMALL = 64 * 1024
_SAME = b"="  # internal tag: the program sent the expected output's exact bytes


class _Items:
    """The elements of a non-plain-data iterable output of a set-comparison task."""

    def __init__(self, elements: list[Any]) -> None:
        self.elements = elements


class Expected:
    """The expected outputs of one stage, as written by ``_reference``: ``_wire.dumps``
    bytes back to back in ``view`` from ``start``, their lengths (and those lengths as the
    index holds them) and per-output flags. Values are unpickled (our own bytes) only when
    needed; nothing is done per output until that output is judged."""

    def __init__(
        self,
        view: memoryview,
        start: int,
        lengths: list[int],
        raw: bytes,
        flags: bytes,
        digests: dict[int, bytes],
    ) -> None:
        self.view, self.raw, self.flags, self.count = view, raw, flags, len(lengths)
        self.digests = digests  # output number -> sha256 of its bytes (the large ones)
        self.offsets = list(itertools.accumulate(lengths, initial=start))
        # where identical bytes do not pass, and where EvalPlus's float quirk applies, as
        # bytes to search in C rather than flags to test one by one
        self._not_same = flags.translate(_NOT_SAME_BYTES_PASS)
        self._floats = flags.translate(_FLOATS)

    def blob(self, i: int) -> memoryview:
        return self.view[self.offsets[i] : self.offsets[i + 1]]

    def same_bytes_pass(self, i: int) -> bool:
        return bool(self.flags[i] & _wire.SAME_BYTES_PASS)

    def floats(self, i: int) -> bool:
        return bool(self.flags[i] & _wire.FLOATS)

    def floats_in(self, i: int, n: int) -> bool:
        return self._floats.find(1, i, i + n) >= 0

    def passing_run(self, i: int) -> int:
        """How many outputs from ``i`` on pass when their bytes are the expected ones."""
        stop = self._not_same.find(1, i)
        return (self.count if stop < 0 else stop) - i

    def run(self, i: int, n: int) -> tuple[bytes, bytes]:
        """Outputs ``i`` to ``i + n``: their lengths as the index holds them, their bytes."""
        return self.raw[8 * i : 8 * (i + n)], bytes(
            self.view[self.offsets[i] : self.offsets[i + n]]
        )

    def value(self, i: int) -> Any:
        return pickle.loads(self.blob(i))

    def digest(self, i: int) -> bytes | None:
        return self.digests.get(i)


_NOT_SAME_BYTES_PASS = bytes(0 if f & _wire.SAME_BYTES_PASS else 1 for f in range(256))
_FLOATS = bytes(1 if f & _wire.FLOATS else 0 for f in range(256))


def judge(req: dict[str, Any], inputs: bytes, data_fd: int | None) -> dict[str, Any]:
    """Fork the program's process (``inputs``: the pickled inputs, which it unpickles), then
    judge what it sends against the expected outputs that ``data_fd`` holds next."""
    read_fd, write_fd = os.pipe()
    answers_read, answers_write = os.pipe()  # the judge's answers to DIGEST messages
    pid = os.fork()
    if pid == 0:  # the program's process; never returns
        os.close(read_fd)
        os.close(answers_write)
        _child.serve(req, inputs, write_fd, answers_read)
    os.close(write_fd)
    os.close(answers_read)
    inbox = _wire.Inbox(read_fd, pid, answers_write)
    try:
        assert data_fd is not None
        expected = _load_expected(data_fd)
        # only EvalPlus's special oracles look at an input: one per output otherwise
        given = pickle.loads(inputs) if req.get("special_oracle") else None
        return _judge_candidate(req, given, expected, inbox)
    except _child.CpuTimeout:
        return _fail(None, None, "timeout: checking the outputs exceeded its CPU budget")
    finally:
        inbox.stop()


def _load_expected(data_fd: int) -> dict[str, Expected]:
    """The expected outputs that follow the inputs in the data file (``_reference``'s
    layout: an index, the outputs' bytes back to back, the large ones' digests), mapped, not
    copied."""
    index = _wire.read_section(data_fd, _INDEX_LIMIT)
    lengths, flags = _wire.read_index(index)
    raw = _wire.index_lengths(index)
    pos = os.lseek(data_fd, 0, os.SEEK_CUR)
    size = os.fstat(data_fd).st_size
    base = sum(lengths[0])
    end = pos + base + sum(lengths[1])  # where the digest section begins
    if end + 8 > size:
        raise ValueError("the expected-output file does not match its index")
    view = memoryview(mmap.mmap(data_fd, 0, prot=mmap.PROT_READ))  # size > pos > 0
    os.close(data_fd)  # the mapping outlives the descriptor
    if end + 8 + int.from_bytes(view[end : end + 8], "little") != size:
        raise ValueError("the expected-output file does not match its index")
    digests = _wire.read_digests(view[end + 8 :])
    count = len(lengths[0])
    cut = 8 * count
    base_digests = {i: d for i, d in digests.items() if i < count}
    plus_digests = {i - count: d for i, d in digests.items() if i >= count}
    return {
        "base": Expected(view, pos, lengths[0], raw[:cut], flags[0], base_digests),
        "plus": Expected(view, pos + base, lengths[1], raw[cut:], flags[1], plus_digests),
    }


def _fail(stage: str | None, index: int | None, reason: str) -> dict[str, Any]:
    return {"passed": False, "stage": stage, "index": index, "reason": reason}


def _judge_candidate(
    req: dict[str, Any],
    inputs: dict[str, Any] | None,
    expected: dict[str, Expected],
    inbox: _wire.Inbox,
) -> dict[str, Any]:
    for stage in ("base", "plus"):
        count = expected[stage].count
        given = [None] * count if inputs is None else inputs[f"{stage}_input"]
        failure = _judge_stage(req, stage, given, expected[stage], inbox)
        if failure is not None:
            return failure
    counts = f"{expected['base'].count} base + {expected['plus'].count} plus inputs"
    return {"passed": True, "stage": None, "index": None, "reason": f"passed all {counts}"}


def _judge_stage(
    req: dict[str, Any], stage: str, inputs: list[Any], expected: Expected, inbox: _wire.Inbox
) -> dict[str, Any] | None:
    """EvalPlus's per-input loop (``unsafe_execute``), with outputs from the program's process."""
    tag, value = _receive(req, inbox, None, 0)
    if tag != _wire.LOADED:
        return _fail(stage, None, f"{stage}: program failed to load: {value}")
    atol = req["atol"]
    checks = req.get("checks")
    i = 0
    while i < len(inputs):
        if checks is None:
            # a run of outputs sent as the expected outputs' very bytes, all of which pass
            # so: taken whole where the program batched them (``_wire.Outbox``)
            n = inbox.take_same(expected.passing_run(i), functools.partial(expected.run, i))
            if n:
                if atol == 0 and expected.floats_in(i, n):
                    atol = 1e-6  # EvalPlus's float quirk, as in _judge_output
                i += n
                continue
        failure, atol = _judge_output(req, stage, i, inputs[i], expected, inbox, atol)
        if failure is not None:
            return failure
        i += 1
    return None


def _judge_output(
    req: dict[str, Any],
    stage: str,
    i: int,
    inp: Any,
    expected: Expected,
    inbox: _wire.Inbox,
    atol: float,
) -> tuple[dict[str, Any] | None, float]:
    """Output ``i``: a failure or None, and the ``atol`` for the rest of the stage."""
    from hf_skillfollow.scoring import _oracle

    tag, out = _receive(req, inbox, expected, i)
    checks = req.get("checks")
    if checks is not None and tag in (_SAME, _wire.OK):
        # a `tests` task's assert: its own comparison, not EvalPlus's (whose float
        # tolerance would apply to an exact `==`); equal bytes are judged like any output
        try:
            _assert_holds(checks[i], expected.value(i) if tag == _SAME else out, expected, i)
        except _child.CpuTimeout:
            raise
        except BaseException as exc:
            return _fail(stage, i, f"{stage} input #{i}: {_wrong(exc)}"), atol
        return None, atol
    if tag == _SAME:  # the expected output's very bytes, and that is a pass (flags)
        if atol == 0 and expected.floats(i):
            atol = 1e-6  # EvalPlus's float quirk, as in _oracle.matches
        return None, atol
    if tag != _wire.OK:
        return _fail(stage, i, f"{stage} input #{i}: {out}"), atol
    try:
        exp = expected.value(i)
        if isinstance(out, _Items):
            assert set(out.elements) == set(exp)
        else:
            atol = _oracle.matches(req["dataset"], req["entry_point"], inp, out, exp, atol)
    except _child.CpuTimeout:
        raise
    except BaseException as exc:
        return _fail(stage, i, f"{stage} input #{i}: {_wrong(exc)}"), atol
    return None, atol


def _assert_holds(check: list[Any], out: Any, expected: Expected, i: int) -> None:
    """Raise unless assert ``i`` of a `tests` task holds for ``out``, with the comparison it
    states (``_custom.Check``): ``f(...) == e`` exactly (no float tolerance), ``e == f(...)``
    with the literal's ``__eq__`` first, the truth value of ``f(...)``, or ``abs(f(...) - e)``
    strictly below (``<``) or up to (``<=``) its own tolerance, absolute only. ``out`` is plain
    data decoded by ``_wire.decode``: these comparisons run no code of the program's."""
    op, tol, flipped = check
    if op in ("truthy", "falsy"):
        holds = bool(out) if op == "truthy" else not out
    else:
        exp = expected.value(i)
        if op == "==":
            holds = bool(out == exp)
        elif op == "r==":
            holds = bool(exp == out)
        else:
            diff = abs(exp - out) if flipped else abs(out - exp)
            holds = bool(diff < tol) if op == "abs<" else bool(diff <= tol)
    if not holds:
        raise AssertionError()


def _wrong(exc: BaseException) -> str:
    from hf_skillfollow.scoring._oracle import WrongOutput

    if isinstance(exc, WrongOutput):
        return f"wrong output ({exc})"
    if isinstance(exc, AssertionError) and not str(exc):
        return "wrong output"
    return _child.describe(exc)


def _receive(
    req: dict[str, Any], inbox: _wire.Inbox, expected: Expected | None, i: int
) -> tuple[bytes, Any]:
    """(tag, value) for the next message: ``OK`` and the output, ``_SAME`` (the bytes of
    expected output ``i``, which pass), ``LOADED``, or ``ERR`` and the reason the judge gives.
    ``expected`` None: no output is due. The expected output's size bounds what the program
    may send. Never trusts the sender."""
    blob = None if expected is None else expected.blob(i)
    limit = _SMALL if blob is None else max(1 << 20, 64 * len(blob))
    try:
        message = inbox.next(limit, like=blob)
        if message is not None and message[0] == _wire.DIGEST and expected is not None:
            claim = _wire.read_digest(message[1] or b"")
            message = _revealed(inbox, expected, i, claim, limit)
    except _wire.WireError as exc:
        return _wire.ERR, _malformed(req, inbox, exc)
    if message is None:
        return _wire.ERR, _ended(req, inbox)
    tag, body = message
    if body is None:  # OK with the very bytes of the expected output: decode them as our own
        assert expected is not None
        return (_SAME, None) if expected.same_bytes_pass(i) else (_wire.OK, expected.value(i))
    if tag == _wire.LOADED and blob is None and not body:
        return tag, None
    if tag == _wire.ERR:
        return tag, "raised " + body.decode("utf-8", "replace")[:300]
    if tag == _wire.TIMEOUT_CLAIM:
        return _wire.ERR, _timeout_claim(req, inbox)
    if expected is None or blob is None:
        return _wire.ERR, f"malformed output message: unexpected tag {tag!r}"
    if tag == _wire.NOT_NONE and req.get("output_not_none") and body in (b"\x00", b"\x01"):
        from hf_skillfollow.scoring._oracle import Match

        return _wire.OK, Match() if body == b"\x01" else None
    if tag == _wire.ITEMS and req.get("output_set_eq"):
        items = _decode(body, blob)
        if items[0] == _wire.OK and type(items[1]) is not list:
            return _wire.ERR, "malformed output message: elements are not a list"
        return (items[0], _Items(items[1])) if items[0] == _wire.OK else items
    if tag != _wire.OK:
        return _wire.ERR, f"malformed output message: unexpected tag {tag!r}"
    return _decode(body, blob)


def _malformed(req: dict[str, Any], inbox: _wire.Inbox, exc: _wire.WireError) -> str:
    """Why a message was refused: its fault, unless the program's process used up its CPU
    budget (cut off in the middle of a message, as when it pickles a large output again after
    ``SEND``), which is a timeout. The verdict is a failure either way: the process is killed
    (if it still runs) and its usage read."""
    return _timed_out(req, inbox.stop()) or f"malformed output message: {exc}"


def _revealed(
    inbox: _wire.Inbox, expected: Expected, i: int, claim: tuple[int, bytes], limit: int
) -> tuple[bytes, bytes | None] | None:
    """The message that a ``DIGEST`` claim (length, sha256) for output ``i`` stands for:
    ``(OK, None)`` (the expected output's very bytes) where the claim is exactly the expected
    output's stored length and digest, and otherwise, having answered ``SEND``, the next
    message, which must be an ``OK`` message with bytes matching the claim (or the error or
    end that stopped the program). The program learns one bit about an output it has already
    committed to, and cannot change that output after it."""
    blob = expected.blob(i)
    stored = expected.digest(i)
    if stored is not None and claim == (len(blob), stored):
        inbox.answer(_wire.MATCH)
        return _wire.OK, None
    if claim[0] > limit:
        raise _wire.WireError(f"an output of {claim[0]} bytes exceeds the {limit}-byte limit")
    inbox.answer(_wire.SEND)
    message = inbox.next(limit, like=blob)
    if message is None or message[0] in (_wire.ERR, _wire.TIMEOUT_CLAIM):
        return message
    tag, body = message
    if tag != _wire.OK:
        raise _wire.WireError(f"a digest followed by {tag!r}, not by the output's bytes")
    shown = blob if body is None else body
    if len(shown) != claim[0] or hashlib.sha256(shown).digest() != claim[1]:
        raise _wire.WireError("an output's bytes do not match the digest sent for them")
    return message


def _decode(body: bytes, blob: memoryview) -> tuple[bytes, Any]:
    try:
        return _wire.OK, _wire.decode(body, max_elements=max(1 << 16, 8 * len(blob)))
    except _wire.NotComparable as exc:
        return _wire.ERR, f"wrong output ({exc})"
    except _wire.WireError as exc:
        return _wire.ERR, f"malformed output message: {exc}"


def _timeout_claim(req: dict[str, Any], inbox: _wire.Inbox) -> str:
    """The program's process says its CPU budget ran out: check that against its usage."""
    exit_ = inbox.stop()
    timed_out = _timed_out(req, exit_)
    if timed_out:
        return timed_out
    used = _cpu_used(exit_)
    spent = "unknown" if used is None else f"{used:.2f} s"
    return (
        f"raised the scorer's CpuTimeout itself, with its CPU budget not used up "
        f"({spent} of {req['limits']['cpu_s']:.1f} s)"
    )


def _cpu_used(exit_: tuple[int, Any] | None) -> float | None:
    return None if exit_ is None else exit_[1].ru_utime + exit_[1].ru_stime


def _timed_out(req: dict[str, Any], exit_: tuple[int, Any] | None) -> str | None:
    """The reason when the program's process (ended: ``exit_``) used up its CPU budget. Its
    CPU usage decides, not the signal: the program can send itself SIGXCPU or SIGKILL."""
    cpu_s = req["limits"]["cpu_s"]
    used = _cpu_used(exit_)
    if used is not None and used >= cpu_s:
        return f"timeout: CPU time budget of {cpu_s:.1f} s exceeded"
    return None


def _ended(req: dict[str, Any], inbox: _wire.Inbox) -> str:
    """Why the program's messages stopped. Its pipe closes just before it can be reaped; a
    process that closed its pipe and lives on is killed rather than waited for."""
    for _ in range(50):
        if inbox.reap(block=False) is not None:
            break
        time.sleep(0.02)
    exit_ = inbox.stop()
    if exit_ is None:
        return "the program's process vanished"
    status = os.waitstatus_to_exitcode(exit_[0])
    return _timed_out(req, exit_) or f"the program ended its process (exit status {status})"
