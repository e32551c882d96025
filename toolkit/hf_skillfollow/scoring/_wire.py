"""Bytes between the sandbox's processes: length-prefixed sections and tagged messages.

An output crosses from the program's process (``_child``) to the judge (``_judge``) as a
pickle written by ``dumps`` (protocol 5, *fast mode*: no memo, so no shared or cyclic
references) and is read back by ``decode``, which is not ``pickle.loads`` but a small,
iterative interpreter of exactly the opcodes ``dumps`` emits for plain data. It bounds what
the program can make the judge do: message size (checked while reading, never allocated
ahead), element count, nesting depth, and it builds only plain data from validated
arguments (builtins, ``collections``, ``Decimal``, ``Fraction``, numpy arrays and scalars,
dict views). No class lookup, no memo, no call with an argument it did not check. See
docs/sandbox.md.

Because ``dumps`` is deterministic, the judge can compare an output's bytes with the
bytes of the expected output (written by the same function) and decode only on a mismatch;
for an output over ``DIGEST_ABOVE`` bytes it compares their sha256 first (``DIGEST``), and
the bytes cross only if the judge asks for them.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import hashlib
import math
import os
import pickle
import select
import signal
import struct
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

_HEADER = struct.Struct("<Q")
_CHUNK = 1 << 20
_POLL_MS = 200

#: deepest nesting of containers ``decode`` accepts (the judge's comparisons recurse in C)
MAX_DEPTH = 200

# per expected output, written by ``_reference`` and read by ``_judge``: identical bytes from
# the program pass; EvalPlus's ``is_floats`` holds (it sets ``atol`` for the stage)
SAME_BYTES_PASS, FLOATS = 1, 2

# message tags (first byte of a message body)
OK, ITEMS, ERR, TIMEOUT_CLAIM, NOT_NONE, LOADED = b"O", b"I", b"E", b"T", b"N", b"L"
#: consecutive ``OK`` outputs in one message (``batch``): their count, lengths, bodies
BATCH = b"B"
#: ``OK`` outputs shorter than this travel in batches; longer ones as messages of their own
_BATCHED = 1 << 16
#: an ``OK`` output longer than this is first sent as its length and sha256 (body: 8-byte
#: length, 32-byte digest), committing the program to those bytes; the judge answers on its
#: own pipe with ``MATCH`` (identical to the expected output's bytes: nothing more is sent) or
#: ``SEND`` (the next message must be exactly those bytes, as an ``OK`` message). The expected
#: outputs of this size have their digests stored beside them (``digests``).
DIGEST = b"D"
DIGEST_ABOVE = 1 << 20
MATCH, SEND = b"m", b"s"
#: a ``DIGEST`` message's body (length, sha256) and an entry of ``digests`` (number, sha256)
_DIGEST = struct.Struct("<Q32s")
_COUNT = struct.Struct("<I")


class WireError(Exception):
    """The other process sent something that is not a valid message."""


class NotComparable(WireError):
    """A well-formed output that EvalPlus's comparison could only fail on (or blow up in)."""


# --- encoding (either side) -----------------------------------------------------------------


def dict_keys(keys: list[Any]) -> Any:
    return dict.fromkeys(keys).keys()


def dict_values(values: list[Any]) -> Any:
    return dict(enumerate(values)).values()


def dict_items(items: list[tuple[Any, Any]]) -> Any:
    return dict(items).items()


# numpy values travel as (dtype string, shape, raw bytes); ``decode`` validates before these
# run, trusted bytes (expected outputs) go through ``pickle.loads``.
def ndarray(dtype: str, shape: tuple[int, ...], data: bytes) -> Any:
    import numpy as np

    return np.frombuffer(data, np.dtype(dtype)).reshape(shape).copy()


def object_array(shape: tuple[int, ...], items: list[Any]) -> Any:
    import numpy as np

    array = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        array[i] = item
    return array.reshape(shape)


def numpy_scalar(dtype: str, data: bytes) -> Any:
    import numpy as np

    return np.frombuffer(data, np.dtype(dtype))[0]


def _reduce_defaultdict(d: collections.defaultdict[Any, Any]) -> tuple[Any, ...]:
    # The factory (often a lambda) plays no part in comparisons and may not pickle.
    return (collections.defaultdict, (None,), None, None, iter(d.items()))


_DISPATCH = {
    collections.defaultdict: _reduce_defaultdict,
    type({}.keys()): lambda v: (dict_keys, (list(v),)),
    type({}.values()): lambda v: (dict_values, (list(v),)),
    type({}.items()): lambda v: (dict_items, (list(v),)),
}


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        # numpy values as (dtype string, shape, raw bytes): one validated layout to decode,
        # instead of numpy's own reduce (``_reconstruct`` + ``__setstate__``).
        np = sys.modules.get("numpy")
        if np is None:
            return NotImplemented
        if type(obj) is np.ndarray:
            if obj.dtype.hasobject:
                if obj.dtype != np.dtype(object):
                    return NotImplemented
                return object_array, (obj.shape, obj.ravel().tolist())
            if obj.dtype.fields is not None or obj.dtype.subdtype is not None:
                return NotImplemented
            return ndarray, (obj.dtype.str, obj.shape, obj.tobytes())
        if isinstance(obj, np.generic) and type(obj).__module__ == "numpy":
            if obj.dtype.hasobject or obj.dtype.fields is not None:
                return NotImplemented
            return numpy_scalar, (obj.dtype.str, obj.tobytes())
        return NotImplemented


# Containers the pickler writes with opcodes of their own: any other value that reaches
# ``reducer_override`` (which sees everything but None, bools, ints, floats, str and bytes) is
# written by naming a class or function.
_PLAIN_CONTAINERS = frozenset({list, tuple, dict, set, frozenset, bytearray})


class _NotingPickler(_Pickler):
    """Also notes whether a value it wrote named a class or function."""

    named = False

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) not in _PLAIN_CONTAINERS:
            self.named = True
        return super().reducer_override(obj)


class _Capped:
    """A pickler's destination: what it writes, kept up to ``cap`` bytes; beyond that only
    counted and hashed (sha256), so that a large output is never held whole."""

    __slots__ = ("parts", "size", "hasher", "cap")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size, self.cap = 0, 0
        self.hasher: Any = None

    def reset(self, cap: float) -> None:
        self.parts, self.size, self.hasher, self.cap = [], 0, None, cap

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.hasher is not None:
            self.hasher.update(data)
        elif self.size <= self.cap:
            self.parts.append(data)
        else:
            self.hasher = hashlib.sha256()
            for part in self.parts:
                self.hasher.update(part)
            self.hasher.update(data)
            self.parts = []
        return len(data)

    def result(self) -> bytes | tuple[int, bytes]:
        if self.hasher is not None:
            return self.size, self.hasher.digest()
        return self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)


class _Reused:
    """A pickler, reused (a new one costs 2 of the 3 us a small output takes): taken while in
    use, so a nested call gets its own, and dropped when a call fails or was large. Its
    destination is a Python object (``_Capped``), which costs less per small value than a
    ``BytesIO`` to seek, truncate and read back."""

    __slots__ = ("spare",)

    def __init__(self) -> None:
        self.spare: tuple[_Capped, _Pickler] | None = None

    def dump(self, obj: Any) -> bytes:
        """Deterministic bytes for a plain-data value (raises for anything else)."""
        blob = self._dump(obj, math.inf)
        assert type(blob) is bytes
        return blob

    def commit(self, obj: Any) -> bytes | tuple[int, bytes]:
        """``dump(obj)``, or for a value whose bytes are longer than ``DIGEST_ABOVE`` their
        length and sha256 only (see ``DIGEST``)."""
        return self._dump(obj, DIGEST_ABOVE)

    def _dump(self, obj: Any, cap: float) -> bytes | tuple[int, bytes]:
        spare, self.spare = self.spare, None
        if spare is None:
            sink = _Capped()
            pickler = _configured(_Pickler(sink, protocol=5))
        else:
            sink, pickler = spare
        sink.reset(cap)
        pickler.dump(obj)
        result = sink.result()
        if sink.size < _CHUNK:
            self.spare = sink, pickler
        sink.parts = []
        return result


def _configured(pickler: _Pickler) -> _Pickler:
    pickler.dispatch_table = _DISPATCH
    pickler.fast = True  # no memo: shared references are written out, cycles raise
    return pickler


def noting_pickler(file: Any) -> _NotingPickler:
    """A pickler whose ``dump(value)`` writes ``dumps(value)``'s very bytes to ``file`` (as
    frames, while it writes them: a large value is never held whole), and whose ``named``
    attribute notes, until reset, whether a value it wrote named a class or function (numpy
    values, ``Decimal``, dict views, subclasses of builtins...): ``_reference`` then cannot
    take a fresh copy's equality for granted. Decided while writing, not by searching the
    bytes, in which the opcodes that name a class also occur as float and integer data."""
    pickler = _configured(_NotingPickler(file, protocol=5))
    assert isinstance(pickler, _NotingPickler)
    return pickler


_reused = _Reused()
dumps = _reused.dump
#: ``dumps(value)``, or ``(length, sha256)`` of those bytes where they exceed ``DIGEST_ABOVE``
commit = _reused.commit


class _FdWriter:
    """A pickler's destination that writes to a descriptor as it goes, counting."""

    __slots__ = ("fd", "size")

    def __init__(self, fd: int) -> None:
        self.fd, self.size = fd, 0

    def write(self, data: bytes) -> int:
        write_all(self.fd, data)
        self.size += len(data)
        return len(data)


def send_dump(fd: int, tag: bytes, obj: Any, length: int) -> None:
    """One message of ``dumps(obj)``'s bytes, whose ``length`` is known (a committed output's),
    pickled straight to ``fd`` behind its header: never held whole. Raises if the bytes come
    out another length (the stream is then broken, which the judge fails as malformed)."""
    write_all(fd, _HEADER.pack(length + 1) + tag)
    writer = _FdWriter(fd)
    _configured(_Pickler(writer, protocol=5)).dump(obj)
    if writer.size != length:
        raise WireError(f"an output pickled to {writer.size} bytes, then {length}")


# --- decoding (the judge) ------------------------------------------------------------------


def _complex(re: Any, im: Any) -> complex:
    if type(re) not in (float, int) or type(im) not in (float, int):
        raise WireError("complex() of non-numbers")
    return complex(re, im)


# decimal and fractions are imported on first use: the harness imports this module.
def _fraction(num: Any, den: Any) -> Any:
    import fractions

    if type(num) is not int or type(den) is not int or den == 0:
        raise WireError("Fraction of non-integers")
    return fractions.Fraction(num, den)


def _decimal(text: Any) -> Any:
    import decimal

    if type(text) is not str:
        raise WireError("Decimal of a non-string")
    return decimal.Decimal(text)


def _counter(mapping: Any) -> collections.Counter[Any]:
    if type(mapping) is not dict:
        raise WireError("Counter of a non-dict")
    return collections.Counter(mapping)


def _ordered_dict(*args: Any) -> collections.OrderedDict[Any, Any]:
    if args:
        raise WireError("OrderedDict with arguments")
    return collections.OrderedDict()


def _defaultdict(*args: Any) -> collections.defaultdict[Any, Any]:
    if args != (None,):
        raise WireError("defaultdict with a factory")
    return collections.defaultdict()


def _deque(items: Any = (), maxlen: Any = None) -> collections.deque[Any]:
    if type(items) not in (list, tuple) or not (
        maxlen is None or (type(maxlen) is int and maxlen >= 0)
    ):
        raise WireError("deque of a non-sequence")
    return collections.deque(items, maxlen)


def _view(kind: Callable[[list[Any]], Any]) -> Callable[[Any], Any]:
    def build(items: Any) -> Any:
        if type(items) is not list:
            raise WireError("dict view of a non-list")
        return kind(items)

    return build


def _dtype(np: Any, spec: Any) -> Any:
    if type(spec) is not str or len(spec) > 32:
        raise WireError("bad numpy dtype")
    dtype = np.dtype(spec)
    if dtype.kind not in "biufcSUmM" or dtype.fields is not None or dtype.itemsize == 0:
        raise WireError(f"numpy dtype {spec!r} is not plain data")
    return dtype


def _shape(shape: Any) -> int:
    if type(shape) is not tuple or len(shape) > 32:
        raise WireError("bad numpy shape")
    if not all(type(n) is int and n >= 0 for n in shape):
        raise WireError("bad numpy shape")
    return math.prod(shape)


def _not_comparable(size: int) -> NotComparable:
    # EvalPlus evaluates `out == exp` (elementwise for arrays) and then its truth value, which
    # numpy refuses for more than one element; refusing here also keeps a small array from
    # broadcasting against a large expected output into gigabytes.
    return NotComparable(
        f"an ndarray of {size} elements has no truth value, so it can equal nothing"
    )


def _ndarray(spec: Any, shape: Any, data: Any) -> Any:
    import numpy as np

    dtype, size = _dtype(np, spec), _shape(shape)
    if type(data) is not bytes or size * dtype.itemsize != len(data):
        raise WireError("numpy array data does not match its shape")
    if size > 1:
        raise _not_comparable(size)
    return ndarray(spec, shape, data)


def _object_array(shape: Any, items: Any) -> Any:
    size = _shape(shape)
    if type(items) is not list or len(items) != size:
        raise WireError("numpy array items do not match its shape")
    if size > 1:
        raise _not_comparable(size)
    return object_array(shape, items)


def _numpy_scalar(spec: Any, data: Any) -> Any:
    import numpy as np

    dtype = _dtype(np, spec)
    if type(data) is not bytes or len(data) != dtype.itemsize:
        raise WireError("numpy scalar data does not match its dtype")
    return numpy_scalar(spec, data)


_BUILDERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("builtins", "complex"): _complex,
    ("collections", "Counter"): _counter,
    ("collections", "OrderedDict"): _ordered_dict,
    ("collections", "defaultdict"): _defaultdict,
    ("collections", "deque"): _deque,
    ("decimal", "Decimal"): _decimal,
    ("fractions", "Fraction"): _fraction,
    (__name__, "dict_keys"): _view(dict_keys),
    (__name__, "dict_values"): _view(dict_values),
    (__name__, "dict_items"): _view(dict_items),
    (__name__, "ndarray"): _ndarray,
    (__name__, "object_array"): _object_array,
    (__name__, "numpy_scalar"): _numpy_scalar,
}
_CONSTANTS = {("builtins", "Ellipsis"): Ellipsis}


class _Builder:
    """A constructor named by STACK_GLOBAL; only REDUCE can use it."""

    __slots__ = ("name", "build")

    def __init__(self, name: tuple[str, str], build: Callable[..., Any]) -> None:
        self.name, self.build = name, build


_MAPPINGS = (dict, collections.OrderedDict, collections.defaultdict)


def decode(data: bytes, max_elements: int) -> Any:
    """The value ``dumps`` wrote, from untrusted bytes; raises WireError for anything else.

    Work and memory are linear in ``len(data)``; at most ``max_elements`` objects are built
    and containers nest at most ``MAX_DEPTH`` deep.
    """
    try:
        return _Decoder(data, max_elements).run()
    except WireError:
        raise
    except RecursionError:
        raise WireError(f"nesting deeper than {MAX_DEPTH}") from None
    except MemoryError:
        raise WireError("output too large to decode") from None
    except Exception as exc:  # a builder refused its (checked) arguments: say what broke
        raise WireError(f"{type(exc).__name__}: {exc}"[:200]) from None


class _Decoder:
    def __init__(self, data: bytes, max_elements: int) -> None:
        self.data, self.pos, self.budget = data, 0, max_elements
        self.stack: list[Any] = []
        self.depths: list[int] = []  # nesting depth of each stack item (0 for atoms)
        self.marks: list[int] = []

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise WireError("truncated")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def _size(self, fmt: str) -> int:
        return int(struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0])

    def _push(self, value: Any, depth: int = 0) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise WireError("too many elements")
        if depth > MAX_DEPTH:
            raise WireError(f"nesting deeper than {MAX_DEPTH}")
        self.stack.append(value)
        self.depths.append(depth)

    def _pop_mark(self) -> tuple[list[Any], int]:
        if not self.marks:
            raise WireError("no MARK")
        at = self.marks.pop()
        items, depths = self.stack[at:], self.depths[at:]
        del self.stack[at:], self.depths[at:]
        return items, max(depths, default=-1) + 1

    def _pop(self) -> tuple[Any, int]:
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise WireError("stack underflow")
        return self.stack.pop(), self.depths.pop()

    def _container(self, kinds: tuple[type, ...]) -> Any:
        floor = self.marks[-1] if self.marks else 0
        if len(self.stack) <= floor or type(self.stack[-1]) not in kinds:
            raise WireError("items added to something that is not a container")
        return self.stack[-1]

    def _deepen(self, depth: int) -> None:
        if depth > self.depths[-1]:
            if depth > MAX_DEPTH:
                raise WireError(f"nesting deeper than {MAX_DEPTH}")
            self.depths[-1] = depth

    def run(self) -> Any:  # one branch per opcode, flat on purpose
        data, stack = self.data, self.stack
        while True:
            if self.pos >= len(data):
                raise WireError("truncated")
            op = data[self.pos]
            self.pos += 1
            if op == 0x4B:  # BININT1
                self._push(self._take(1)[0])
            elif op == 0x4D:  # BININT2
                self._push(self._size("<H"))
            elif op == 0x4A:  # BININT
                self._push(self._size("<i"))
            elif op == 0x8A:  # LONG1
                self._push(int.from_bytes(self._take(self._take(1)[0]), "little", signed=True))
            elif op == 0x8B:  # LONG4
                self._push(int.from_bytes(self._take(self._size("<i")), "little", signed=True))
            elif op == 0x47:  # BINFLOAT
                self._push(struct.unpack(">d", self._take(8))[0])
            elif op in (0x8C, 0x58, 0x8D):  # SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
                n = self._take(1)[0] if op == 0x8C else self._size("<I" if op == 0x58 else "<Q")
                self._push(str(self._take(n), "utf-8", "surrogatepass"))
            elif op in (0x43, 0x42, 0x8E, 0x96):  # SHORT_BINBYTES, BINBYTES, BINBYTES8, BYTEARRAY8
                n = self._take(1)[0] if op == 0x43 else self._size("<I" if op == 0x42 else "<Q")
                raw = self._take(n)
                self._push(bytearray(raw) if op == 0x96 else raw)
            elif op == 0x4E:  # NONE
                self._push(None)
            elif op in (0x88, 0x89):  # NEWTRUE, NEWFALSE
                self._push(op == 0x88)
            elif op == 0x28:  # MARK
                if len(self.marks) >= MAX_DEPTH:
                    raise WireError(f"nesting deeper than {MAX_DEPTH}")
                self.marks.append(len(stack))
            elif op == 0x29:  # EMPTY_TUPLE
                self._push((), 1)
            elif op in (0x85, 0x86, 0x87):  # TUPLE1..3
                n = op - 0x84
                if len(stack) - n < (self.marks[-1] if self.marks else 0):
                    raise WireError("stack underflow")
                items, depth = stack[-n:], max(self.depths[-n:]) + 1
                del stack[-n:], self.depths[-n:]
                self._push(tuple(items), depth)
            elif op == 0x74:  # TUPLE
                items, depth = self._pop_mark()
                self._push(tuple(items), depth)
            elif op == 0x91:  # FROZENSET
                items, depth = self._pop_mark()
                self._push(frozenset(items), depth)
            elif op == 0x5D:  # EMPTY_LIST
                self._push([], 1)
            elif op == 0x7D:  # EMPTY_DICT
                self._push({}, 1)
            elif op == 0x8F:  # EMPTY_SET
                self._push(set(), 1)
            elif op == 0x61:  # APPEND
                item, depth = self._pop()
                target = self._container((list, collections.deque))
                target.append(item)
                self._deepen(depth + 1)
            elif op == 0x65:  # APPENDS
                items, depth = self._pop_mark()
                self._container((list, collections.deque)).extend(items)
                self._deepen(depth)
            elif op == 0x73:  # SETITEM
                value, dv = self._pop()
                key, dk = self._pop()
                self._container(_MAPPINGS)[key] = value
                self._deepen(max(dk, dv) + 1)
            elif op == 0x75:  # SETITEMS
                items, depth = self._pop_mark()
                if len(items) % 2:
                    raise WireError("odd SETITEMS")
                target = self._container(_MAPPINGS)
                for i in range(0, len(items), 2):
                    target[items[i]] = items[i + 1]
                self._deepen(depth)
            elif op == 0x90:  # ADDITEMS
                items, depth = self._pop_mark()
                self._container((set,)).update(items)
                self._deepen(depth)
            elif op == 0x93:  # STACK_GLOBAL
                name, _ = self._pop()
                module, _ = self._pop()
                key = (module, name)
                if key in _CONSTANTS:
                    self._push(_CONSTANTS[key])
                elif key in _BUILDERS:
                    self._push(_Builder(key, _BUILDERS[key]))
                else:
                    raise WireError(f"{str(module)[:60]}.{str(name)[:60]} is not plain data")
            elif op in (0x52, 0x81):  # REDUCE, NEWOBJ (the same, for these constructors)
                args, depth = self._pop()
                builder, _ = self._pop()
                if type(builder) is not _Builder or type(args) is not tuple:
                    raise WireError("REDUCE of something that is not an allowed constructor")
                try:
                    value = builder.build(*args)
                except (TypeError, ValueError, ArithmeticError) as exc:
                    where = ".".join(builder.name)
                    raise WireError(f"{where} of bad arguments ({exc})"[:200]) from None
                self._push(value, depth)
            elif op == 0x95:  # FRAME (a read-ahead hint)
                if self._size("<Q") > len(data) - self.pos:
                    raise WireError("truncated")
            elif op == 0x80:  # PROTO
                if self.pos != 1 or self._take(1)[0] > pickle.HIGHEST_PROTOCOL:
                    raise WireError("bad protocol header")
            elif op == 0x2E:  # STOP
                if len(stack) != 1 or self.marks or self.pos != len(data):
                    raise WireError("not exactly one value")
                value = stack[0]
                if type(value) is _Builder:
                    raise WireError("a constructor is not a value")
                return value
            else:
                raise WireError(f"opcode {op:#04x} is not allowed")


# --- framing ----------------------------------------------------------------------------------


def section(blob: bytes) -> bytes:
    return _HEADER.pack(len(blob)) + blob


# The expected outputs' index (``_reference`` writes it, ``_judge`` reads it): the number of
# outputs per stage, each output's byte length, each output's flags. Its size follows from
# the counts alone, so the reference reserves it and writes the outputs after it as it encodes
# them.
_COUNTS = struct.Struct("<QQ")


def index_size(base: int, plus: int) -> int:
    """Bytes of the index section (header included) for these numbers of outputs."""
    return _HEADER.size + _COUNTS.size + 9 * (base + plus)


def index(lengths: tuple[list[int], list[int]], flags: tuple[bytes, bytes]) -> bytes:
    """The index section: ``lengths`` and ``flags`` of the base and the plus outputs."""
    (base, plus), count = lengths, len(lengths[0]) + len(lengths[1])
    if (len(flags[0]), len(flags[1])) != (len(base), len(plus)):
        raise ValueError("one flags byte per output")
    body = _COUNTS.pack(len(base), len(plus)) + struct.pack(f"<{count}Q", *base, *plus)
    return section(body + flags[0] + flags[1])


def read_index(body: bytes) -> tuple[tuple[list[int], list[int]], tuple[bytes, bytes]]:
    """``index``'s lengths and flags back from its section's body."""
    if len(body) < _COUNTS.size:
        raise WireError("index section too short")
    base, plus = _COUNTS.unpack_from(body)
    count = base + plus
    if len(body) != _COUNTS.size + 9 * count:
        raise WireError("index section does not match its counts")
    lengths = list(struct.unpack_from(f"<{count}Q", body, _COUNTS.size))
    flags = body[_COUNTS.size + 8 * count :]
    return (lengths[:base], lengths[base:]), (flags[:base], flags[base:])


def index_lengths(body: bytes) -> bytes:
    """The output lengths of an index section's body as it holds them (8 bytes each, base
    then plus), for comparing with a ``batch``'s; ``read_index`` checks the body."""
    base, plus = _COUNTS.unpack_from(body)
    return body[_COUNTS.size : _COUNTS.size + 8 * (base + plus)]


def digests(entries: list[tuple[int, bytes]]) -> bytes:
    """The section of the expected outputs' digests, after their bytes: for each output longer
    than ``DIGEST_ABOVE``, its number (base then plus, from 0) and the sha256 of its bytes."""
    return section(b"".join(_DIGEST.pack(i, d) for i, d in entries))


def read_digests(body: Any) -> dict[int, bytes]:
    """``digests``' entries back from its section's body: output number -> sha256."""
    if len(body) % _DIGEST.size:
        raise WireError("digest section does not hold whole entries")
    return {i: d for i, d in _DIGEST.iter_unpack(body)}


def digest_message(length: int, digest: bytes) -> bytes:
    return message(DIGEST, _DIGEST.pack(length, digest))


def read_digest(body: bytes) -> tuple[int, bytes]:
    """A ``DIGEST`` message's (length, sha256) from its body (untrusted: checked)."""
    if len(body) != _DIGEST.size:
        raise WireError(f"a digest message of {len(body)} bytes, not {_DIGEST.size}")
    length, digest = _DIGEST.unpack(body)
    return int(length), bytes(digest)


def await_answer(fd: int) -> bool:
    """The judge's answer to a ``DIGEST`` message (blocking): True for ``MATCH``."""
    answer = os.read(fd, 1)
    if answer not in (MATCH, SEND):
        raise WireError(f"the judge answered {answer!r}")
    return answer == MATCH


def message(tag: bytes, body: bytes = b"") -> bytes:
    return _HEADER.pack(len(body) + 1) + tag + body


def batch(bodies: list[bytes]) -> bytes:
    """One ``BATCH`` message for consecutive ``OK`` outputs: their count (4 bytes), each
    body's length (8 bytes each, the index's layout) and the bodies back to back, so that the
    judge compares a run of outputs with the expected ones in two comparisons."""
    lengths = [len(body) for body in bodies]
    head = _COUNT.pack(len(bodies)) + struct.pack(f"<{len(bodies)}Q", *lengths)
    return message(BATCH, head + b"".join(bodies))


def send(fd: int, tag: bytes, body: bytes = b"") -> None:
    """Write one message; a large body is written as it is, not copied behind its header."""
    if len(body) < _CHUNK:
        write_all(fd, message(tag, body))
    else:
        write_all(fd, _HEADER.pack(len(body) + 1) + tag)
        write_all(fd, body)


class Outbox:
    """Messages written together, in order: one write per millisecond of the sender's work or
    per 64 KB instead of one per message (each write wakes the judge to read one message).
    Consecutive small ``OK`` outputs go as one ``BATCH`` message (``batch``), which the judge
    can accept whole when it is exactly the expected outputs' bytes. A message of ``_CHUNK``
    bytes or more goes out at once, after what is held. The judge still sees a wrong output
    within a millisecond of the program's time; the holder must ``flush()`` before any other
    write."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.parts: list[bytes] = []
        self.outputs: list[bytes] = []  # OK bodies of the batch being gathered
        self.size = 0
        self.since = time.perf_counter()

    def add(self, tag: bytes, body: bytes) -> None:
        if tag == OK and len(body) < _BATCHED:
            self.outputs.append(body)
            self.size += len(body) + 8
        elif len(body) >= _CHUNK:
            self.flush()
            send(self.fd, tag, body)
            return
        else:
            self._close_batch()
            part = message(tag, body)
            self.parts.append(part)
            self.size += len(part)
        if self.size >= 1 << 16 or time.perf_counter() - self.since > 1e-3:
            self.flush()

    def _close_batch(self) -> None:
        if self.outputs:
            self.parts.append(batch(self.outputs))
            self.outputs = []

    def flush(self) -> None:
        self._close_batch()
        if self.parts:
            write_all(self.fd, b"".join(self.parts))
            self.parts, self.size = [], 0
        self.since = time.perf_counter()


def write_all(fd: int, blob: bytes) -> None:
    view = memoryview(blob)
    while view:
        view = view[os.write(fd, view) :]


def read_section(fd: int, limit: int) -> bytes:
    """One length-prefixed section from a blocking fd (the task's data file)."""
    header = _read_exact(fd, _HEADER.size)
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise WireError(f"section of {size} bytes exceeds the {limit}-byte limit")
    return _read_exact(fd, size)


def _read_exact(fd: int, size: int) -> bytes:
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise WireError(f"stream ended after {got} of {size} bytes")
        got += n
    return bytes(buf)


class _Batch:
    """An opened ``BATCH`` message (untrusted: checked whole before any output is taken)."""

    __slots__ = ("body", "count", "taken", "pos", "lengths", "sizes", "differs")

    def __init__(self, body: bytes) -> None:
        if len(body) < _COUNT.size:
            raise WireError("batch too short")
        (count,) = _COUNT.unpack_from(body)
        head = _COUNT.size + 8 * count
        if count == 0 or len(body) < head:
            raise WireError("batch does not match its count")
        self.sizes = struct.unpack_from(f"<{count}Q", body, _COUNT.size)
        if sum(self.sizes) != len(body) - head:
            raise WireError("batch does not match its lengths")
        self.body, self.count, self.taken, self.pos = body, count, 0, head
        self.lengths = body[_COUNT.size : head]
        self.differs = False  # a run differed from the expected outputs: one by one from now

    def done(self) -> bool:
        return self.taken == self.count

    def pop(self) -> bytes:
        size = self.sizes[self.taken]
        body = self.body[self.pos : self.pos + size]
        self.taken += 1
        self.pos += size
        return body

    def take_if(self, n: int, lengths: bytes, bodies: bytes) -> bool:
        """Take the next ``n`` outputs if their lengths and bodies are exactly these."""
        start = 8 * self.taken
        end = self.pos + len(bodies)
        if self.lengths[start : start + 8 * n] != lengths or self.body[self.pos : end] != bodies:
            self.differs = True
            return False
        self.taken += n
        self.pos = end
        return True


class Inbox:
    """Messages from the program's process ``pid`` on the pipe ``fd``.

    ``next()`` returns None once the process has ended and its pipe is drained, even if a
    process it started still holds the pipe open. Reads are buffered (a program's outputs
    are mostly a few bytes each: one read serves many), at most ``_CHUNK`` bytes at a time,
    so a message announcing gigabytes allocates nothing ahead of what arrives. A ``BATCH``
    message is opened by ``next()`` and handed out one ``OK`` output at a time, or, by
    ``take_same``, as a run of outputs equal to the expected ones.
    """

    def __init__(self, fd: int, pid: int, answers: int | None = None) -> None:
        os.set_blocking(fd, False)
        if answers is not None:
            os.set_blocking(answers, False)
        self.fd, self.pid, self.answers = fd, pid, answers
        self.exit: tuple[int, Any] | None = None  # (wait status, rusage) once reaped
        self._buf, self._pos = b"", 0
        self._batch: _Batch | None = None

    def next(self, limit: int, like: Any = None) -> tuple[bytes, bytes | None] | None:
        """(tag, body) of the next message, whose size must not exceed ``limit`` bytes.

        ``like`` (a buffer): the body an ``OK`` message is expected to carry. A message that
        is exactly ``OK`` + ``like`` comes back as ``(OK, None)``, compared as it arrives
        and never held whole (an output can be a gigabyte). The outputs of a ``BATCH``
        message come back one by one as ``OK`` messages, each within ``limit``."""
        if self._batch is None:
            message = self._next(limit, like)
            if message is None or message[0] != BATCH:
                return message
            assert message[1] is not None
            self._batch = _Batch(message[1])
        return self._from_batch(limit, like)

    def answer(self, verdict: bytes) -> None:
        """Write the answer to a ``DIGEST`` message without blocking: a program that does not
        read its answers (or closed their pipe) cannot stall the judge, it fails."""
        if self.answers is None:
            raise WireError("a digest message where none can be answered")
        try:
            written = os.write(self.answers, verdict)
        except OSError as exc:  # full (answers left unread) or closed
            raise WireError(f"the judge's answer could not be written ({exc.strerror})") from None
        if written != len(verdict):
            raise WireError("the judge's answer could not be written")

    def _from_batch(self, limit: int, like: Any) -> tuple[bytes, bytes | None]:
        held = self._batch
        assert held is not None
        body = held.pop()
        if held.done():
            self._batch = None
        if len(body) > limit:
            raise WireError(f"an output of {len(body)} bytes exceeds the {limit}-byte limit")
        if like is not None and len(body) == len(like) and body == bytes(like):
            return OK, None
        return OK, body

    def take_same(self, most: int, expected: Callable[[int], tuple[bytes, bytes]]) -> int:
        """How many of the next outputs (at most ``most``) are exactly the expected ones,
        taken in two comparisons where an open batch holds them: ``expected(n)`` gives the
        raw lengths (the index's layout) and the bodies back to back of the next ``n``
        expected outputs. 0, with nothing taken, where there is no open batch or it differs
        (``next()`` then hands its outputs out one by one)."""
        held = self._batch
        if held is None or held.differs or most <= 0:
            return 0
        n = min(most, held.count - held.taken)
        lengths, bodies = expected(n)
        if not held.take_if(n, lengths, bodies):
            return 0
        if held.done():
            self._batch = None
        return n

    def _next(self, limit: int, like: Any) -> tuple[bytes, bytes | None] | None:
        buf, pos = self._buf, self._pos
        if len(buf) - pos > _HEADER.size:  # the common case: a whole small message is read
            (size,) = _HEADER.unpack_from(buf, pos)
            start, end = pos + _HEADER.size, pos + _HEADER.size + size
            if 0 < size <= limit + 1 and end <= len(buf):
                self._pos = end
                tag, body = buf[start : start + 1], buf[start + 1 : end]
                # bytes(): as below (a 1 MB body against a memoryview: 3.3 ms, not 0.2)
                same = like is not None and tag == OK and len(body) == len(like)
                if same and body == bytes(like):
                    return tag, None
                return tag, body
        header = self._take(_HEADER.size, at_boundary=True)
        if header is None:
            return None
        (size,) = _HEADER.unpack(header)
        if size == 0 or size - 1 > limit:
            raise WireError(f"a message of {size} bytes exceeds the {limit}-byte limit")
        if like is None or size - 1 != len(like):
            body = self._take(size, at_boundary=False)
            assert body is not None
            return body[:1], body[1:]
        tag = self._take(1, at_boundary=False)
        if tag != OK:
            return tag, self._take(size - 1, at_boundary=False)
        pos = 0
        for chunk in self._chunks(size - 1):
            end = pos + len(chunk)
            # bytes(): a memoryview compares byte by byte in Python's slow path
            if chunk != bytes(like[pos:end]):  # differs: the body in full, for decoding
                rest = self._take(size - 1 - end, at_boundary=False)
                assert rest is not None
                return tag, b"".join((bytes(like[:pos]), chunk, rest))
            pos = end
        return tag, None

    def _take(self, size: int, at_boundary: bool) -> bytes | None:
        end = self._pos + size
        if end <= len(self._buf):  # the common case: already read
            piece = self._buf[self._pos : end]
            self._pos = end
            return piece
        chunks = list(self._chunks(size, at_boundary))
        if not chunks:
            return None  # ended cleanly between messages
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _chunks(self, size: int, at_boundary: bool = False) -> Iterator[bytes]:
        """``size`` bytes as they arrive; raises if the stream ends before (nothing at all
        is a clean end where ``at_boundary``)."""
        got = 0
        while got < size:
            if self._pos == len(self._buf) and not self._fill():
                if at_boundary and got == 0:
                    return
                self._truncated(got, size)
            piece = self._buf[self._pos : self._pos + size - got]
            self._pos += len(piece)
            got += len(piece)
            yield piece

    def _fill(self) -> bool:
        """Read what has arrived (waiting for something); False at the end of the stream."""
        while True:
            try:
                self._buf, self._pos = os.read(self.fd, _CHUNK), 0
            except BlockingIOError:
                if not self._wait_readable():
                    self._buf = b""
                    return False
                continue
            return bool(self._buf)

    def _truncated(self, got: int, size: int) -> NoReturn:
        raise WireError(f"message truncated after {got} of {size} bytes")

    def _wait_readable(self) -> bool:
        """Block until data arrives (True) or the process has ended with nothing left (False)."""
        poller = select.poll()
        poller.register(self.fd, select.POLLIN | select.POLLHUP)
        while True:
            if poller.poll(0 if self.exit is not None else _POLL_MS):
                return True
            if self.exit is not None:
                return False
            self.reap(block=False)

    def stop(self) -> tuple[int, Any] | None:
        """Kill the program's process (unless it was reaped already) and reap it: its exit
        status and usage, None if it could not be waited for."""
        if self.exit is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        return self.reap(block=True)

    def reap(self, block: bool) -> tuple[int, Any] | None:
        if self.exit is None:
            try:
                pid, status, usage = os.wait4(self.pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return None
            except OSError as exc:  # pragma: no cover - EINTR is retried by Python
                if exc.errno != errno.EINTR:
                    raise
                return None
            if pid == self.pid:
                self.exit = (status, usage)
        return self.exit
