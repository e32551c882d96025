"""Bytes between the sandbox's processes: length-prefixed sections and messages.

The program's process (``_child``) pickles its outputs; the harness that judges them
(``_judge``) unpickles them with ``load_untrusted``, whose ``find_class`` admits only plain
data types (builtins, ``collections``, ``decimal``, ``fractions``, numpy arrays and scalars),
so a crafted pickle cannot run code in the judge. Message sizes are bounded before any
byte of the body is read.
"""

from __future__ import annotations

import collections
import errno
import importlib
import io
import os
import pickle
import select
import struct
from typing import Any

_HEADER = struct.Struct("<Q")
_CHUNK = 1 << 20
_POLL_MS = 200

_BUILTINS = (
    "set frozenset complex slice range bytearray bytes list tuple dict int float str bool Ellipsis"
)
_NUMPY = {
    "numpy": ("ndarray", "dtype"),
    "numpy._core.multiarray": ("_reconstruct", "scalar"),
    "numpy.core.multiarray": ("_reconstruct", "scalar"),
    "numpy._core.numeric": ("_frombuffer",),
    "numpy.core.numeric": ("_frombuffer",),
}
_ALLOWED = (
    {("builtins", name) for name in _BUILTINS.split()}
    | {("collections", n) for n in ("OrderedDict", "defaultdict", "Counter", "deque")}
    | {("decimal", "Decimal"), ("fractions", "Fraction")}
    | {(module, name) for module, names in _NUMPY.items() for name in names}
    | {(__name__, n) for n in ("dict_keys", "dict_values", "dict_items")}
)


class WireError(Exception):
    """The other process sent something that is not a valid message."""


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise WireError(
                f"{module}.{name} is not plain data (allowed: builtins, collections, "
                "decimal, fractions and numpy values)"
            )
        return getattr(importlib.import_module(module), name)

    def persistent_load(self, pid: Any) -> Any:
        raise WireError("persistent references are not allowed")


def load_untrusted(blob: bytes) -> Any:
    try:
        return _PlainDataUnpickler(io.BytesIO(blob)).load()
    except WireError:
        raise
    except Exception as exc:  # a malformed pickle: say what broke, not where
        raise WireError(f"malformed output: {type(exc).__name__}: {exc}"[:300]) from None


# Dict views cannot be pickled; these rebuild equal views (set-like ``==`` included).
def dict_keys(keys: list[Any]) -> Any:
    return dict.fromkeys(keys).keys()


def dict_values(values: list[Any]) -> Any:
    return dict(enumerate(values)).values()


def dict_items(items: list[tuple[Any, Any]]) -> Any:
    return dict(items).items()


def _reduce_defaultdict(d: collections.defaultdict[Any, Any]) -> tuple[Any, ...]:
    # The factory (often a lambda) plays no part in comparisons and may not pickle.
    return (collections.defaultdict, (None,), None, None, iter(d.items()))


_DISPATCH = {
    collections.defaultdict: _reduce_defaultdict,
    type({}.keys()): lambda v: (dict_keys, (list(v),)),
    type({}.values()): lambda v: (dict_values, (list(v),)),
    type({}.items()): lambda v: (dict_items, (list(v),)),
}


def dumps(obj: Any) -> bytes:
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(obj)
    return buf.getvalue()


def section(blob: bytes) -> bytes:
    return _HEADER.pack(len(blob)) + blob


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


def read_rest(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, _CHUNK):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_exact(fd: int, size: int) -> bytes:
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise WireError(f"stream ended after {got} of {size} bytes")
        got += n
    return bytes(buf)


class Inbox:
    """Messages from the program's process ``pid`` on the pipe ``fd``.

    ``next()`` returns None once the process has ended and its pipe is drained, even if a
    process it started still holds the pipe open.
    """

    def __init__(self, fd: int, pid: int, max_bytes: int) -> None:
        os.set_blocking(fd, False)
        self.fd, self.pid, self.max_bytes = fd, pid, max_bytes
        self.exit: tuple[int, Any] | None = None  # (wait status, rusage) once reaped

    def next(self) -> tuple[str, Any] | None:
        header = self._take(_HEADER.size, at_boundary=True)
        if header is None:
            return None
        (size,) = _HEADER.unpack(header)
        if size > self.max_bytes:
            raise WireError(f"an output of {size} bytes exceeds the {self.max_bytes}-byte limit")
        body = self._take(size, at_boundary=False)
        if body is None:
            raise WireError("the program's process ended in the middle of an output")
        message = load_untrusted(body)
        if not (isinstance(message, tuple) and len(message) == 2 and type(message[0]) is str):
            raise WireError("malformed message")
        return message

    def _take(self, size: int, at_boundary: bool) -> bytes | None:
        buf = bytearray(size)
        view, got = memoryview(buf), 0
        while got < size:
            try:
                n = os.readv(self.fd, [view[got:]])
            except BlockingIOError:
                if not self._wait_readable():
                    return None if at_boundary and got == 0 else self._truncated(got, size)
                continue
            if n == 0:
                return None if at_boundary and got == 0 else self._truncated(got, size)
            got += n
        return bytes(buf)

    def _truncated(self, got: int, size: int) -> None:
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
