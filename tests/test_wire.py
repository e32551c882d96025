"""The judge's decoder of untrusted output bytes (``scoring._wire``), without a sandbox.

Honest values round-trip with their exact types; hostile byte strings (deep nesting, huge
claimed sizes, constructors that allocate, memo tricks) are refused with a reason that says
what was wrong, using memory and time linear in the bytes received.
"""

from __future__ import annotations

import collections
import decimal
import faulthandler
import fcntl
import fractions
import io
import math
import os
import pickle
import struct
import time

import numpy as np
import pytest

from hf_skillfollow.scoring import _wire
from hf_skillfollow.scoring._wire import NotComparable, WireError, decode, dumps
from tests._noting import new_sink, noted

_HONEST = [
    None,
    True,
    False,
    0,
    -1,
    255,
    65535,
    -(2**31),
    2**31,
    10**40,
    -(10**400),
    1.5,
    -0.0,
    math.inf,
    -math.inf,
    "",
    "héllo\U0001f600",
    "x" * 70_000,
    b"\x00\xff",
    bytearray(b"abc"),
    (),
    (1,),
    (1, 2),
    (1, 2, 3),
    (1, 2, 3, 4),
    [],
    [1, [2, [3, []]]],
    {"a": 1, 2: [3]},
    {1, 2, 3},
    frozenset({(1, 2), "x"}),
    set(),
    frozenset(),
    complex(1, -2),
    collections.Counter("mississippi"),
    collections.OrderedDict([("b", 1), ("a", 2)]),
    collections.deque([1, 2, 3], maxlen=5),
    collections.deque(),
    decimal.Decimal("1.10"),
    fractions.Fraction(3, 4),
    {"k": 1}.keys(),
    {"k": [1]}.items(),
    Ellipsis,
    list(range(5000)),
    [(i, str(i)) for i in range(3000)],
    np.float64(1.5),
    np.int32(-7),
    np.bool_(True),
    np.array([2.5]),
    np.array(7),
    np.array([], dtype=np.int64),
]


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, type({}.keys()) | type({}.items())):
        return list(a) == list(b)
    if isinstance(a, collections.deque):
        return a == b and a.maxlen == b.maxlen
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a.items()) == list(b.items())
    if isinstance(a, float) and a == 0:
        return math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


@pytest.mark.parametrize("value", _HONEST, ids=lambda v: type(v).__name__)
def test_honest_values_round_trip_with_their_types(value: object) -> None:
    assert _same(decode(dumps(value), max_elements=1 << 20), value)


def test_nan_and_defaultdict_and_values_view() -> None:
    assert math.isnan(decode(dumps(float("nan")), 10))
    d = collections.defaultdict(lambda: 0, {"a": 1})  # the lambda factory is dropped
    back = decode(dumps(d), 10)
    assert type(back) is collections.defaultdict and back == {"a": 1}
    assert list(decode(dumps({1: "v"}.values()), 10)) == ["v"]


def test_the_reference_notes_exactly_when_the_bytes_name_a_class() -> None:
    """``_reference`` trusts the note instead of searching the bytes: it must be True exactly
    when an opcode that names a class or function occurs (pickletools' reading of the bytes,
    not a byte search), whatever bytes the data holds, and its bytes are ``dumps``'s."""
    import pickletools

    looks_named = [struct.unpack(">d", b"\x93\x82\x83\x84\x93\x82\x83\x84")[0], 0x93828384]
    values = [*_HONEST, looks_named, [looks_named, [{"k": (1, np.int64(2))}]], [[[]], {1: ()}]]
    naming = {"STACK_GLOBAL", "GLOBAL", "INST", "OBJ", "EXT1", "EXT2", "EXT4"}
    for value in values:
        blob, named = noted(value)
        assert blob == dumps(value)
        ops = {op.name for op, _, _ in pickletools.genops(blob)}
        assert named == bool(ops & naming), value
    assert b"\x93" in dumps(looks_named) and not noted(looks_named)[1]
    sink = new_sink()
    with pytest.raises(AttributeError):  # a failure leaves no note behind for the next value
        noted([lambda: 0], sink)
    assert not noted([1.5], sink)[1]


def test_dumps_is_deterministic_and_shares_nothing() -> None:
    inner = [1, 2]
    shared = [inner, inner]
    assert dumps(shared) == dumps([[1, 2], [1, 2]])
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(ValueError):
        dumps(looped)


def test_larger_numpy_arrays_are_refused_as_never_equal() -> None:
    with pytest.raises(NotComparable, match="ndarray of 3 elements"):
        decode(dumps(np.array([1.0, 2.0, 3.0])), 100)


def _pickle(body: bytes) -> bytes:
    return b"\x80\x05" + body + b"."


def _global(module: str, name: str) -> bytes:
    return b"".join(b"\x8c" + bytes([len(s)]) + s.encode() for s in (module, name)) + b"\x93"


@pytest.mark.parametrize(
    "blob,reason",
    [
        # 10^6-deep tuple inside a frozenset: pickle.loads hashes it and overflows the C stack
        (_pickle(b"(" + b")" + b"\x85" * 10**6 + b"\x91"), "nesting deeper than 200"),
        (_pickle(b"]" * 300 + b"a" * 299), "nesting deeper than 200"),
        (_pickle(b"(" * 10**6), "nesting deeper than 200"),
        (_pickle(b"]" * 100_000), "too many elements"),
        # set(range(10**9)) from a few bytes
        (
            _pickle(
                _global("builtins", "set")
                + _global("builtins", "range")
                + b"J\x00\xca\x9a\x3b\x85R\x85R"
            ),
            "builtins.set is not plain data",
        ),
        (
            _pickle(_global("builtins", "bytearray") + b"J\x00\xca\x9a\x3b\x85R"),
            "builtins.bytearray is not plain data",
        ),
        (_pickle(_global("os", "system") + b"\x8c\x02id\x85R"), "os.system is not plain data"),
        # a memo slot at index 2**28 makes pickle.loads allocate and zero 2 GiB
        (_pickle(b"N\x72" + struct.pack("<I", 1 << 28)), "opcode 0x72 is not allowed"),
        (_pickle(b"\x8c\x05hello\x94h\x00"), "opcode 0x94 is not allowed"),
        (_pickle(b"B" + struct.pack("<I", 1 << 31) + b"x"), "truncated"),
        (
            _pickle(_global("numpy", "ndarray") + b"K\x01\x85R"),
            "numpy.ndarray is not plain data",
        ),
        (
            _pickle(
                _global(_wire.__name__, "ndarray")
                + b"\x8c\x03<f8"
                + b"J\x00\xca\x9a\x3b\x85"
                + b"C\x00\x87R"
            ),
            "does not match its shape",
        ),
        (
            _pickle(
                _global(_wire.__name__, "ndarray")
                + b"\x8c\x02|O"
                + b"K\x01\x85"
                + b"C\x08"
                + b"\x00" * 8
                + b"\x87R"
            ),
            "not plain data",
        ),
        (_pickle(_global("fractions", "Fraction") + b"\x8c\x051e999\x85R"), "Fraction"),
        (b"\x80\x05N.trailing", "not exactly one value"),
        (b"\x80\x05NN.", "not exactly one value"),
        (b"", "truncated"),
        (b"\x80\x05]N", "truncated"),
    ],
)
def test_hostile_bytes_are_refused_with_a_reason(blob: bytes, reason: str) -> None:
    with pytest.raises(WireError, match=reason):
        decode(blob, max_elements=1 << 16)


def test_unpickling_the_deep_frozenset_crashes_pickle_itself() -> None:
    """Why the judge does not use ``pickle.loads`` on program bytes: this is the message of
    the first hostile case, and the stock unpickler dies of it (in a child process here)."""
    blob = _pickle(b"(" + b")" + b"\x85" * 10**6 + b"\x91")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child dies or exits
        faulthandler.disable()  # the crash is expected: no traceback dump from pytest's handler
        try:
            pickle.loads(blob)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 11  # SIGSEGV


def test_announced_sizes_allocate_nothing_ahead() -> None:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover
        os.close(read_fd)
        os.write(write_fd, struct.pack("<Q", 1 << 40) + b"O")
        os._exit(0)
    os.close(write_fd)
    inbox = _wire.Inbox(read_fd, pid)
    with pytest.raises(WireError, match="exceeds the 1024-byte limit"):
        inbox.next(1024)
    inbox.reap(block=True)
    os.close(read_fd)


def _inbox_fed(pieces: list[bytes], pause_s: float = 0.0) -> _wire.Inbox:
    """An Inbox reading what a forked process writes, piece by piece, then it exits."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover
        os.close(read_fd)
        for piece in pieces:
            os.write(write_fd, piece)
            time.sleep(pause_s)
        os._exit(0)
    os.close(write_fd)
    return _wire.Inbox(read_fd, pid)


_MESSAGES = [
    (_wire.LOADED, b""),
    (_wire.OK, dumps([1, 2, 3])),
    (_wire.OK, dumps("x" * 5000)),
    (_wire.OK, dumps(7)),
    (_wire.ERR, b"ValueError: no"),
]
#: what each message above is compared with: identical, identical, a different value of the
#: same length, a different length
_LIKE = [None, dumps([1, 2, 3]), dumps("y" * 5000), dumps(70000), None]
_WANT = [
    (_wire.LOADED, b""),
    (_wire.OK, None),
    (_wire.OK, dumps("x" * 5000)),
    (_wire.OK, dumps(7)),
    (_wire.ERR, b"ValueError: no"),
]


@pytest.mark.parametrize("split", ["one write", "byte by byte"])
def test_the_inbox_reads_messages_however_they_arrive(split: str) -> None:
    """Many messages in one read, and messages cut anywhere (headers included) across
    reads, come out the same, each compared with its expected bytes."""
    stream = b"".join(_wire.message(tag, body) for tag, body in _MESSAGES)
    if split == "one write":
        inbox = _inbox_fed([stream])
    else:  # small pauses so that the reader really sees the pieces one by one
        inbox = _inbox_fed([stream[i : i + 1] for i in range(len(stream))], pause_s=1e-5)
    got = [inbox.next(1 << 20, like=like) for like in _LIKE]
    assert got == _WANT
    assert inbox.next(1 << 20) is None  # ended cleanly between messages
    inbox.reap(block=True)
    os.close(inbox.fd)


def test_a_message_cut_by_the_end_of_its_process_is_truncated() -> None:
    stream = _wire.message(_wire.OK, dumps(5)) + _wire.message(_wire.OK, dumps("abc"))[:-2]
    inbox = _inbox_fed([stream])
    assert inbox.next(1024, like=dumps(5)) == (_wire.OK, None)
    with pytest.raises(WireError, match="truncated"):
        inbox.next(1024, like=dumps("abc"))
    inbox.reap(block=True)
    os.close(inbox.fd)


def _fresh_dumps(obj: object) -> bytes:
    """What ``dumps`` wrote before it reused its pickler: a new one per value."""
    buf = io.BytesIO()
    pickler = _wire._Pickler(buf, protocol=5)
    pickler.dispatch_table = _wire._DISPATCH
    pickler.fast = True
    pickler.dump(obj)
    return buf.getvalue()


def _nested(depth: int, leaf: object) -> list:
    value: list = [leaf, leaf]
    for _ in range(depth):
        value = [value, 1.5]
    return value


def test_the_reused_pickler_writes_what_a_fresh_one_writes_even_after_failures() -> None:
    """Failures deep inside a value (past the depth where the fast pickler starts tracking
    containers for cycles) and cycles must leave nothing behind for the next value."""
    with pytest.raises(AttributeError):  # a local function cannot be pickled
        dumps(_nested(80, lambda: 0))
    cycle: list = []
    cycle.append(_nested(70, cycle))
    with pytest.raises(ValueError):
        dumps(cycle)
    shared = [1, 2]
    values = [*_HONEST, _nested(80, shared), _nested(3, "x" * (2 << 20)), True]
    for value in values:
        assert dumps(value) == _fresh_dumps(value)


@pytest.mark.parametrize("body", [b"O" + b"x" * 2000, b""])
def test_a_whole_message_over_the_limit_or_empty_is_refused_when_already_read(
    body: bytes,
) -> None:
    """The path for a message already in the buffer keeps the size checks of the other."""
    stream = struct.pack("<Q", len(body)) + body + _wire.message(_wire.OK, dumps(1))
    inbox = _inbox_fed([stream])
    inbox._fill()  # the whole stream in the buffer, as after a read that served many
    with pytest.raises(WireError, match="exceeds the 1024-byte limit"):
        inbox.next(1024)
    inbox.reap(block=True)
    os.close(inbox.fd)


def _readable(fd: int) -> bytes:
    """What the pipe holds now, without waiting."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 24)
    except BlockingIOError:
        return b""


def test_the_outbox_holds_small_messages_and_sends_them_in_order() -> None:
    read_fd, write_fd = os.pipe()
    out = _wire.Outbox(write_fd)
    out.since = math.inf  # as if no time passed: only size or flush() sends
    out.add(_wire.OK, dumps(1))
    out.add(_wire.OK, dumps("ab"))
    assert _readable(read_fd) == b""  # held, not one write per message
    out.flush()
    assert _readable(read_fd) == _wire.batch([dumps(1), dumps("ab")])  # one message for both
    big = dumps("z" * (1 << 20))  # at least _CHUNK: sent at once, after what is held
    out.since = math.inf
    out.add(_wire.ERR, b"small")
    os.set_blocking(read_fd, True)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - writes more than a pipe holds: a reader must drain it
        os.close(read_fd)
        out.add(_wire.OK, big)
        os._exit(0)
    os.close(write_fd)
    inbox = _wire.Inbox(read_fd, pid)
    assert inbox.next(1 << 22) == (_wire.ERR, b"small")
    assert inbox.next(1 << 22, like=big) == (_wire.OK, None)
    assert inbox.next(1 << 22) is None
    inbox.reap(block=True)
    os.close(read_fd)


def test_the_outbox_sends_once_it_holds_64_kb_or_a_millisecond_passed() -> None:
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    out = _wire.Outbox(write_fd)
    out.since = math.inf
    body = dumps("y" * 1000)
    count = -(-(1 << 16) // (len(body) + 8))  # the first count at which it holds 64 KB or more
    for _ in range(count - 1):
        out.add(_wire.OK, body)
    assert _readable(read_fd) == b""
    out.add(_wire.OK, body)
    assert _readable(read_fd) == _wire.batch([body] * count)
    out.since = time.perf_counter() - 0.002  # the program worked 2 ms since the last write
    out.add(_wire.OK, dumps(3))
    assert _readable(read_fd) == _wire.batch([dumps(3)])
    os.close(read_fd)
    os.close(write_fd)


def test_other_messages_close_the_batch_so_order_is_kept() -> None:
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)  # holds it all: nobody reads yet
    out = _wire.Outbox(write_fd)
    out.since = math.inf
    mid = dumps("m" * (1 << 16))  # too long for a batch: a message of its own
    for tag, body in [(_wire.OK, dumps(1)), (_wire.NOT_NONE, b"\x01"), (_wire.OK, dumps(2)),
                      (_wire.OK, mid), (_wire.OK, dumps(3))]:  # fmt: skip
        out.add(tag, body)
    out.flush()
    want = [_wire.batch([dumps(1)]), _wire.message(_wire.NOT_NONE, b"\x01"),
            _wire.batch([dumps(2)]), _wire.message(_wire.OK, mid), _wire.batch([dumps(3)])]  # fmt: skip
    assert _readable(read_fd) == b"".join(want)
    os.close(read_fd)
    os.close(write_fd)


_OUTS = [dumps(i * 7) for i in range(10)] + [dumps("x" * 300), dumps([1.5, 2.5])]


def _expected_run(outs: list[bytes]):  # type: ignore[no-untyped-def]
    """``take_same``'s view of expected outputs ``outs`` (as ``_judge.Expected.run`` gives)."""
    raw = struct.pack(f"<{len(outs)}Q", *map(len, outs))

    def run(start: int, n: int) -> tuple[bytes, bytes]:
        return raw[8 * start : 8 * (start + n)], b"".join(outs[start : start + n])

    return run


def test_a_batch_of_the_expected_bytes_is_taken_whole_and_one_by_one_otherwise() -> None:
    run = _expected_run(_OUTS)
    inbox = _inbox_fed([_wire.batch(_OUTS) + _wire.message(_wire.ERR, b"after")])
    assert inbox.take_same(5, lambda n: run(0, n)) == 0  # no batch open yet
    assert inbox.next(1 << 20, like=_OUTS[0]) == (_wire.OK, None)  # opens it: the first alone
    assert inbox.take_same(4, lambda n: run(1, n)) == 4  # at most what was asked
    assert inbox.take_same(100, lambda n: run(5, n)) == 7  # at most what the batch holds
    assert inbox.take_same(5, lambda n: run(12, n)) == 0  # none open: the next is no batch
    assert inbox.next(1 << 20) == (_wire.ERR, b"after")
    inbox.reap(block=True)
    os.close(inbox.fd)


def test_a_batch_that_differs_anywhere_is_handed_out_one_by_one() -> None:
    sent = [*_OUTS[:6], dumps(999), *_OUTS[7:]]  # output 6 differs, of another length
    run = _expected_run(_OUTS)
    inbox = _inbox_fed([_wire.batch(sent)])
    assert inbox.next(1 << 20, like=_OUTS[0]) == (_wire.OK, None)
    assert inbox.take_same(11, lambda n: run(1, n)) == 0  # lengths differ: nothing taken
    got = [inbox.next(1 << 20, like=_OUTS[i]) for i in range(1, len(_OUTS))]
    assert got[5] == (_wire.OK, dumps(999))
    assert all(g == (_wire.OK, None) for i, g in enumerate(got) if i != 5)
    # same lengths, other bytes: refused too
    sent = [*_OUTS[:3], dumps(22), *_OUTS[4:]]  # 21 -> 22: one byte differs
    assert len(sent[3]) == len(_OUTS[3])
    inbox = _inbox_fed([_wire.batch(sent)])
    assert inbox.next(1 << 20, like=_OUTS[0]) == (_wire.OK, None)
    assert inbox.take_same(11, lambda n: run(1, n)) == 0
    assert [inbox.next(1 << 20, like=_OUTS[i])[1] for i in (1, 2, 3)] == [None, None, dumps(22)]
    inbox.reap(block=True)
    os.close(inbox.fd)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"\x00\x00", "batch too short"),
        (struct.pack("<I", 0), "does not match its count"),
        (struct.pack("<I", 3) + struct.pack("<Q", 1), "does not match its count"),
        (struct.pack("<IQ", 1, 5) + b"abcd", "does not match its lengths"),
        (struct.pack("<IQ", 1, 3) + b"abcd", "does not match its lengths"),
        (struct.pack("<IQQ", 2, 1 << 62, 1 << 62) + b"ab", "does not match its lengths"),
    ],
)
def test_a_malformed_batch_is_refused(body: bytes, reason: str) -> None:
    inbox = _inbox_fed([_wire.message(_wire.BATCH, body)])
    with pytest.raises(WireError, match=reason):
        inbox.next(1 << 20)
    inbox.reap(block=True)
    os.close(inbox.fd)


def test_each_output_of_a_batch_keeps_its_own_size_limit() -> None:
    inbox = _inbox_fed([_wire.batch([dumps(1), dumps("z" * 5000)])])
    assert inbox.next(1 << 20) == (_wire.OK, dumps(1))  # the first output's limit: 1 MiB
    with pytest.raises(WireError, match="an output of 5017 bytes exceeds the 1024-byte limit"):
        inbox.next(1024)
    inbox.reap(block=True)
    os.close(inbox.fd)


# --- large outputs committed by their digest -------------------------------------------------


def _sized(n: int) -> bytes:
    """A bytes value whose ``dumps`` is exactly ``n`` bytes long."""
    value = b"x" * (n - len(dumps(b"")))
    for _ in range(16):  # the opcode for a long bytes takes more bytes of length
        if len(dumps(value)) == n:
            return value
        value = value[: n - len(dumps(value)) + len(value)]
    raise AssertionError(n)


def test_commit_gives_the_bytes_up_to_the_threshold_and_only_a_digest_past_it() -> None:
    import hashlib

    at = _sized(_wire.DIGEST_ABOVE)
    assert _wire.commit(at) == dumps(at) and len(dumps(at)) == _wire.DIGEST_ABOVE
    past = _sized(_wire.DIGEST_ABOVE + 1)
    blob = dumps(past)
    assert _wire.commit(past) == (len(blob), hashlib.sha256(blob).digest())
    # many frames, a large string written whole, nested containers: the same digest
    for value in ([str(i) * 3 for i in range(300_000)], ["a" * 3_000_000, [1.5] * 10]):
        blob = dumps(value)
        assert _wire.commit(value) == (len(blob), hashlib.sha256(blob).digest())
    assert _wire.commit([1, "a"]) == dumps([1, "a"])  # the pickler is reused after a large one


def test_send_dump_writes_the_message_dumps_would_and_refuses_another_length() -> None:
    value = {"k": list(range(200_000))}
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    expected = _wire.message(_wire.OK, dumps(value))
    pid = os.fork()
    if pid == 0:  # pragma: no cover
        os.close(read_fd)
        _wire.send_dump(write_fd, _wire.OK, value, len(dumps(value)))
        os._exit(0)
    os.close(write_fd)
    inbox = _wire.Inbox(read_fd, pid)
    assert inbox.next(1 << 22) == (_wire.OK, expected[9:])
    inbox.reap(block=True)
    os.close(read_fd)
    with open(os.devnull, "wb") as sink, pytest.raises(WireError, match="pickled to"):
        _wire.send_dump(sink.fileno(), _wire.OK, value, 10)


def test_digest_messages_and_the_payload_section_refuse_bad_sizes() -> None:
    digest = bytes(range(32))
    body = _wire.digest_message(5, digest)[9:]
    assert _wire.read_digest(body) == (5, digest)
    for bad in (body[:-1], body + b"x", b""):
        with pytest.raises(WireError, match="a digest message of"):
            _wire.read_digest(bad)
    section = _wire.digests([(0, digest), (7, digest[::-1])])
    assert _wire.read_digests(section[8:]) == {0: digest, 7: digest[::-1]}
    assert _wire.read_digests(_wire.digests([])[8:]) == {}
    with pytest.raises(WireError, match="whole entries"):
        _wire.read_digests(section[8:-1])


def test_an_answer_the_program_does_not_read_fails_instead_of_blocking() -> None:
    read_fd, write_fd = os.pipe()
    answers_read, answers_write = os.pipe()
    fcntl.fcntl(answers_write, 1031, 4096)  # F_SETPIPE_SZ: one page of answers
    inbox = _wire.Inbox(read_fd, os.getpid(), answers_write)
    start = time.monotonic()
    with pytest.raises(WireError, match="answer could not be written"):
        for _ in range(1 << 20):
            inbox.answer(_wire.SEND)
    assert time.monotonic() - start < 5
    os.close(answers_read)  # closed by the program: refused the same way
    with pytest.raises(WireError, match="answer could not be written"):
        inbox.answer(_wire.MATCH)
    with pytest.raises(WireError, match="none can be answered"):
        _wire.Inbox(read_fd, os.getpid()).answer(_wire.MATCH)
    for fd in (read_fd, write_fd, answers_write):
        os.close(fd)
