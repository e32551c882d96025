"""EvalPlus's MBPP+ and HumanEval+ problems, read through EvalPlus's own loaders, and a local
benchmark file's problems without their inputs until something uses them.

Decoding the inputs is most of loading a file (HumanEval+'s ~160,000 inputs: 0.135 s of
0.18 s), and a ``score`` run whose expected outputs are cached never uses them: the cache's
payload holds them. So the first load of a file's bytes writes every problem's other fields
(prompt, canonical solution, entry point, ``atol``...) to the cache, under a key of the
bytes' sha256 and EvalPlus's version; a later load of the same bytes reads those and gives
each problem a `LazyProblem`, whose ``base_input`` and ``plus_input`` EvalPlus decodes from
the same bytes (kept in memory, not read again) the first time anything reads them.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import sys
import tempfile
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from hf_skillfollow._dirs import cache_root
from hf_skillfollow._task import TaskLoadError
from hf_skillfollow.benchmarks import BENCHMARKS

INPUTS = ("base_input", "plus_input")
#: what EvalPlus's loaders raise for a file they cannot read (``load_error`` words it)
LOAD_ERRORS = (OSError, EOFError, KeyError, AssertionError, ValueError)
#: bump when the fields cache's layout changes: old entries are then ignored
_FORMAT = "1"
#: a fields cache file larger than this is ignored (HumanEval+'s: ~0.4 MB)
_MAX_CACHE_BYTES = 64 * 1024 * 1024
#: EvalPlus's loaders set module globals and the environment while they read: one at a time
_loading = threading.Lock()


def evalplus_data() -> tuple[Any, Any]:
    """EvalPlus's ``humaneval`` and ``mbpp`` loader modules.

    Their package (``evalplus.data``) imports ``datasets`` for its EvalPerf loader alone,
    which this toolkit never calls; that import is ~2 s of every ``score``/``run`` start. If
    ``datasets`` is not loaded yet, the package gets a stand-in while it imports, whose
    ``load_dataset`` loads the real library on first call; the real module is what any later
    ``import datasets`` finds."""
    stand_in = None
    if "evalplus.data" not in sys.modules and "datasets" not in sys.modules:
        stand_in = types.ModuleType("datasets")

        def load_dataset(*args: Any, **kwargs: Any) -> Any:
            import datasets

            return datasets.load_dataset(*args, **kwargs)

        stand_in.load_dataset = load_dataset  # type: ignore[attr-defined]
        sys.modules["datasets"] = stand_in
    try:
        from evalplus.data import humaneval, mbpp
    finally:
        if stand_in is not None and sys.modules.get("datasets") is stand_in:
            del sys.modules["datasets"]
    return humaneval, mbpp


def problems(benchmark: str, path: str | None) -> tuple[dict[str, dict[str, Any]], str, str]:
    """EvalPlus's problems of ``benchmark`` (from ``path``, else its official release), the
    md5 of their file and EvalPlus's release name. Raises what EvalPlus raises."""
    humaneval, mbpp = evalplus_data()
    with _loading:
        if BENCHMARKS[benchmark].evalplus_dataset == "mbpp":
            with _override(mbpp, "MBPP_OVERRIDE_PATH", path):
                return mbpp.get_mbpp_plus(), mbpp.get_mbpp_plus_hash(), mbpp.MBPP_PLUS_VERSION
        with _override(humaneval, "HUMANEVAL_OVERRIDE_PATH", path):
            return (
                humaneval.get_human_eval_plus(),
                humaneval.get_human_eval_plus_hash(),
                humaneval.HUMANEVAL_PLUS_VERSION,
            )


@contextmanager
def _override(module: Any, name: str, path: str | None) -> Iterator[None]:
    # EvalPlus reads the override variable once, at import: set the module global (and the
    # environment, for anything that re-reads it) for the duration of the call.
    if path is None:
        yield
        return
    old_attr, old_env = getattr(module, name), os.environ.get(name)
    setattr(module, name, path)
    os.environ[name] = path
    try:
        yield
    finally:
        setattr(module, name, old_attr)
        if old_env is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old_env


def load_error(benchmark: str, where: str, exc: BaseException) -> TaskLoadError:
    """The error for a benchmark file (or release, ``where``) EvalPlus could not read."""
    return TaskLoadError(f"cannot load {benchmark} from {where}: {exc}")


def first_record(data: bytes, gzipped: bool) -> Any:
    """The first non-blank line of a (gzipped) JSON-lines file's bytes, decoded; raises
    ``OSError``/``EOFError`` (gzip), ``UnicodeDecodeError`` or ``ValueError`` (JSON)."""
    with gzip.GzipFile(fileobj=io.BytesIO(data)) if gzipped else io.BytesIO(data) as fh:
        line = next((ln for ln in fh if ln.strip()), b"")
    return json.loads(line.decode("utf-8")) if line else {}


def load_file(benchmark: str, path: str, data: bytes) -> tuple[list[dict[str, Any]], str]:
    """The problems of the benchmark file ``path`` whose bytes are ``data``, in file order,
    and the md5 of those bytes (EvalPlus's digest of the file). Raises what EvalPlus raises
    (``OSError``, ``KeyError``, ``AssertionError``, ``ValueError``) for a file it cannot
    read."""
    md5 = hashlib.md5(data).hexdigest()
    key = _key(benchmark, data)
    fields = _read_fields(key)
    if fields is not None:
        inputs = _FileInputs(benchmark, path, data)
        return [LazyProblem(f, inputs.loader(f["task_id"])) for f in fields], md5
    loaded = list(_decode(benchmark, path, data).values())
    _write_fields(key, [{k: v for k, v in p.items() if k not in INPUTS} for p in loaded])
    return loaded, md5


def _decode(benchmark: str, path: str, data: bytes) -> dict[str, dict[str, Any]]:
    """EvalPlus's problems from ``data``: its loader reads a private copy of the bytes, so
    what it decodes is what was hashed, whatever happens to ``path`` meanwhile."""
    suffix = ".jsonl.gz" if path.endswith(".gz") else ".jsonl"  # EvalPlus decides by the name
    with tempfile.TemporaryDirectory(prefix="hf-skillfollow-tasks-") as tmp:
        copy = Path(tmp) / f"tasks{suffix}"
        copy.write_bytes(data)
        return problems(benchmark, str(copy))[0]


class _FileInputs:
    """A file's inputs, decoded by EvalPlus from its bytes the first time a task's are read."""

    def __init__(self, benchmark: str, path: str, data: bytes) -> None:
        self.benchmark, self.path, self.data = benchmark, path, data
        self.by_id: dict[str, dict[str, Any]] | None = None
        self.lock = threading.Lock()

    def loader(self, task_id: str) -> Callable[[], dict[str, Any]]:
        return lambda: self.of(task_id)

    def of(self, task_id: str) -> dict[str, Any]:
        with self.lock:
            if self.by_id is None:
                try:
                    decoded = _decode(self.benchmark, self.path, self.data)
                except LOAD_ERRORS as exc:
                    raise load_error(self.benchmark, self.path, exc) from exc
                self.by_id = {t: {k: p[k] for k in INPUTS} for t, p in decoded.items()}
                self.data = b""
        found = self.by_id.get(task_id)
        if found is None:
            raise TaskLoadError(
                f"{self.path}: task {task_id!r} of the cached tasks is not in the file; "
                f"delete {cache_dir()} and load it again"
            )
        return found


class LazyProblem(dict):  # type: ignore[type-arg]
    """An EvalPlus problem whose ``base_input`` and ``plus_input`` are decoded when first read.

    It holds its other fields; it answers ``in`` for its inputs without decoding them, and
    fills itself in place, once, before anything reads them or the whole (iteration, copies,
    ``==``, JSON, pickling: a pickled one arrives as a plain dict)."""

    __slots__ = ("_inputs",)

    def __init__(
        self, fields: Any = (), inputs: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        # without `inputs`, a plain dict (``dataclasses.asdict`` and ``fromkeys`` make one so)
        super().__init__(fields)
        self._inputs = inputs

    def _fill(self) -> None:
        load = self._inputs
        if load is not None:
            dict.update(self, load())
            self._inputs = None  # after the update: `in` holds meanwhile

    def __getitem__(self, key: Any) -> Any:
        if key in INPUTS:
            self._fill()
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key in INPUTS:
            self._fill()
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (self._inputs is not None and key in INPUTS)

    def __reduce__(self) -> tuple[Any, ...]:
        self._fill()
        return (dict, (dict(dict.items(self)),))


def _filled(name: str) -> Callable[..., Any]:
    method = getattr(dict, name)

    def call(self: LazyProblem, *args: Any, **kwargs: Any) -> Any:
        self._fill()
        return method(self, *args, **kwargs)

    call.__name__ = name
    return call


# Everything else that reads or changes the whole dict fills it first. With ``__iter__``
# overridden, CPython copies it (``dict(p)``, ``{**p}``, ``update``) through ``keys()`` and
# ``__getitem__``, and the JSON encoder reads it through ``items()``.
for _name in (
    "__iter__", "__len__", "__eq__", "__ne__", "__repr__", "__reversed__", "__or__", "__ror__",
    "__ior__", "__setitem__", "__delitem__", "keys", "items", "values", "copy", "pop",
    "popitem", "setdefault", "update", "clear",
):  # fmt: skip
    setattr(LazyProblem, _name, _filled(_name))


# --- the fields cache ------------------------------------------------------------------------


def cache_dir() -> Path:
    return cache_root() / "tasks"


@cache
def evalplus_version() -> str:
    """EvalPlus's version, as its build wrote it into the package (its metadata when the
    package has none): importing ``importlib.metadata`` alone takes ~20 ms of a start."""
    import evalplus

    found = getattr(evalplus, "__version__", "local-dev")
    if found == "local-dev":  # its fallback when the build wrote no version
        from importlib.metadata import version

        found = version("evalplus")
    return str(found)


def _key(benchmark: str, data: bytes) -> str:
    parts = [_FORMAT, benchmark, evalplus_version(), hashlib.sha256(data).hexdigest()]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


_REQUIRED = ("task_id", "prompt", "entry_point", "canonical_solution")


def _read_fields(key: str) -> list[dict[str, Any]] | None:
    """The cached fields of every problem, or None (none cached, or not in the right form)."""
    try:
        with (cache_dir() / f"{key}.json").open("rb") as fh:
            blob = fh.read(_MAX_CACHE_BYTES + 1)
        if len(blob) > _MAX_CACHE_BYTES:
            return None
        entry = json.loads(blob)
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    fields = entry.get("problems")
    if not isinstance(fields, list) or not fields:
        return None
    for f in fields:
        if not isinstance(f, dict) or not all(isinstance(f.get(k), str) for k in _REQUIRED):
            return None
        if any(k in f for k in INPUTS) or not all(map(_plain_field, f.items())):
            return None
    return fields


def _plain_field(item: tuple[str, Any]) -> bool:
    """Whether a cached field has the type EvalPlus's rows give it: every field a string but
    ``atol``, a number. An entry of other types is ignored like any other malformed one."""
    name, value = item
    if name == "atol":
        return type(value) in (int, float)
    return isinstance(value, str)


def _write_fields(key: str, fields: list[dict[str, Any]]) -> None:
    """Cache ``fields``; only if JSON gives them back as they are (EvalPlus decodes nothing
    but the inputs, so they are JSON's own values). A cache that cannot be written is no
    error: the next load decodes the file again."""
    blob = json.dumps({"key": key, "problems": fields}).encode()
    if json.loads(blob)["problems"] != fields:
        return
    from hf_skillfollow.store import atomic_write_bytes

    with contextlib.suppress(OSError):
        atomic_write_bytes(cache_dir() / f"{key}.json", blob)
