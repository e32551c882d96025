"""What reading one source may cost, checked on the parquet footers before any row is decoded.

A results repo is written by whoever publishes it. Parquet compresses and dictionary-encodes,
so a few kilobytes can decode to gigabytes: one 64 MB string stored once in a dictionary page
and referenced by every row is a 12 KB file that becomes rows x 64 MB in memory. The footer
of each file says how many rows it holds and how large each column chunk is once
decompressed; where that cannot bound the decoded size (a dictionary chunk: each row may
repeat the largest value) or the longest string, the string columns are read as dictionaries,
which never expands a repeated value, and measured exactly. Over a limit the source is
refused with an error naming the file and the limit (the board shows it as one warning, the
other sources stay up).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hf_skillfollow._files import regular_file
from hf_skillfollow.hub._layout import HubError, unreadable

_MiB = 1 << 20
_GiB = 1 << 30
#: A file whose footer bounds its decoded size below this is not read twice to measure it.
_CHEAP_BOUND = 64 * _MiB


class BudgetError(HubError):
    """A source would cost more than its budget to read; the message names file and limit."""


@dataclass(frozen=True)
class Budget:
    """Limits on reading the files of one source (one repo, folder or run)."""

    #: Bytes of parquet files read.
    file_bytes: int
    #: Bytes the rows may take once decoded (strings expanded, pages decompressed).
    decoded_bytes: int
    #: Bytes of the longest value of a string column, checked when a file is measured (a
    #: long value in a small file costs little; the board shows a capped prefix of it).
    string_chars: int
    #: Rows in all files together.
    rows: int
    #: Files: each costs a footer read (~2 ms), and 2 GiB of files is ~1.4 million one-row
    #: files. A results repo holds one per run and config (the board is measured at 12,500).
    files: int = 100_000


#: Transitions: the 12,500-cell board (10^6 rows) decodes to a few hundred MB; identity
#: strings (model ids, task ids) are short; a Hub model id is at most 96 characters.
TRANSITIONS = Budget(file_bytes=2 * _GiB, decoded_bytes=2 * _GiB, string_chars=4_096,
                     rows=20_000_000)  # fmt: skip
#: Traces and annotations hold whole conversations and returned SKILL.md texts.
TRACES = Budget(file_bytes=2 * _GiB, decoded_bytes=2 * _GiB, string_chars=4 * _MiB,
                rows=20_000_000)  # fmt: skip
BUDGETS = {"transitions": TRANSITIONS, "traces": TRACES, "annotations": TRACES,
           "verifications": TRANSITIONS}  # fmt: skip


class Meter:
    """Running totals of one source's reads against its budget."""

    def __init__(self, budget: Budget, source: str) -> None:
        self.budget, self.source = budget, source
        self.file_bytes = self.decoded = self.rows = self.files = 0

    def count_files(self, paths: Sequence[Path]) -> None:
        """Refuse a source of more files than the budget's, from its listing alone (before
        any is opened); each file is counted again as it is read (`_counted`)."""
        if len(paths) > self.budget.files:
            raise BudgetError(
                f"{self.source}: {len(paths):,} files, past {self.budget.files:,} files (a "
                "source may hold at most that many); the source is not shown"
            )

    def check(self, path: Path, file: pq.ParquetFile | None = None) -> None:
        """Count `path` (opened as `file` when the caller has it) or raise BudgetError."""
        file = self._counted(path, file)
        bound = self._admitted(path, file.metadata)
        if bound is not None:
            self._count_decoded(bound, path)

    def read(self, path: Path, file: pq.ParquetFile, dictionary: Sequence[str] = ()) -> pa.Table:
        """Every column of `path`, checked as `check` checks it (the same errors, in the same
        order) with one read, a file under the footer bound counted at what its read took.
        Where the footer cannot bound the decoded size, the string columns are read as
        dictionaries, measured and kept as read, and then the other
        columns are read, instead of reading the strings once to measure them and again to
        use them. Otherwise the columns named in `dictionary` are read as dictionaries (for
        the caller), the rest as stored."""
        file = self._counted(path, file)
        meta = file.metadata
        bound = _footer_bound(meta)
        if bound <= _CHEAP_BOUND:
            # the bound must fit before the read; what the read took is what counts (as in
            # `read_whole`: a dictionary chunk's bound is its size per row)
            self._over("bytes once decoded", self.decoded + bound, self.budget.decoded_bytes, path)
            # ParquetFile refuses a name it lacks, or one that is no string leaf (a list)
            present = {f.name for f in file.schema_arrow if is_string_like(f.type)}
            wanted = [c for c in dictionary if c in present]
            table = pq.ParquetFile(path, read_dictionary=wanted).read()
            self._count_decoded(table.nbytes, path)
            return table
        strings = self._measurable(path, meta)
        read = _read_strings(path, strings, threads=True)
        self._count_decoded(self._measured(path, meta, strings, read), path)
        measured = set(read.column_names)
        rest = [n for n in file.schema_arrow.names if n not in measured]
        if rest:
            others = file.read(columns=rest)
            read = pa.Table.from_arrays(
                [*read.columns, *others.columns],
                schema=pa.schema([*read.schema, *others.schema], metadata=others.schema.metadata),
            )
        return read.select(file.schema_arrow.names)  # the file's column order

    def read_whole(self, path: Path, file: pq.ParquetFile, lock: threading.Lock) -> pa.Table:
        """Every column of `path` as stored, for a reader of many files (`lock`: held while
        counting, not while reading). Checked as `check` checks it; a file whose footer
        bound is small enough not to measure it is then counted at what its rows took once
        read. That bound counts a dictionary chunk at its size per row: ~336 KB for a run
        file of 80 rows that takes ~40 KB, so honest repos of more than ~6,400 such runs
        passed 2 GiB on paper. The bound still has to fit before the file is read, so no
        file is decoded past the limit."""
        with lock:
            file = self._counted(path, file)
            cheap = self._admitted(path, file.metadata)
        table = file.read(use_threads=False)
        if cheap is not None:
            with lock:
                self._count_decoded(table.nbytes, path)
        return table

    def _admitted(self, path: Path, meta: pq.FileMetaData) -> int | None:
        """The footer bound of a file whose rows may be read, once it fits what is left of
        the budget (the caller counts it, or what the read took); where it passes
        `_CHEAP_BOUND` the strings are measured and counted here instead, and None."""
        bound = _footer_bound(meta)
        if bound <= _CHEAP_BOUND:
            self._over("bytes once decoded", self.decoded + bound, self.budget.decoded_bytes, path)
            return bound
        strings = self._measurable(path, meta)
        measured = self._measured(path, meta, strings, _read_strings(path, strings))
        self._count_decoded(measured, path)
        return None

    def _counted(self, path: Path, file: pq.ParquetFile | None) -> pq.ParquetFile:
        """`path` opened (or `file`), its bytes and rows counted against the budget."""
        b = self.budget
        try:
            regular_file(path)  # before anything opens it: a FIFO would block the reader
        except OSError as exc:
            raise HubError(f"{self.source}: {exc}") from None
        self.files += 1
        self._over("files", self.files, b.files, path)
        self.file_bytes += os.path.getsize(path)
        self._over("bytes of parquet files", self.file_bytes, b.file_bytes, path)
        file = file if file is not None else _open(path)
        _check_names(path, file.schema_arrow.names)
        self.rows += file.metadata.num_rows
        self._over("rows", self.rows, b.rows, path)
        return file

    def _count_decoded(self, size: int, path: Path) -> None:
        self.decoded += size
        self._over("bytes once decoded", self.decoded, self.budget.decoded_bytes, path)

    def _measurable(self, path: Path, meta: pq.FileMetaData) -> list[str]:
        """The string leaves to read as dictionaries and measure, once the file's value slots
        (which that read allocates, and any read of the file) are within the budget: those
        whose every chunk decodes with a bounded effort (`_measurable_chunk`)."""
        self._over(
            "bytes once decoded", self.decoded + _slots(meta), self.budget.decoded_bytes, path
        )
        unbounded = {
            meta.row_group(g).column(c).path_in_schema
            for g in range(meta.num_row_groups)
            for c in range(meta.num_columns)
            if not _measurable_chunk(meta.row_group(g).column(c))
        }
        leaves = _string_leaves(meta.schema.to_arrow_schema())
        return [leaf for leaf in leaves if leaf not in unbounded]

    def _measured(
        self, path: Path, meta: pq.FileMetaData, strings: list[str], table: pa.Table
    ) -> int:
        """Exact decoded size of the string columns (`table`: them, read as dictionaries)
        with their slots (offsets), plus the footer's bound of the other chunks: a number its
        width per slot, a string left unread (one no dictionary read can measure, or under a
        type the walk does not enter, such as a map) as `_footer_bound` bounds it."""
        total = 0
        for name in table.column_names:
            for chunk in table[name].chunks:
                size, longest = _dictionary_size(chunk)
                total += size
                if longest > self.budget.string_chars:
                    raise BudgetError(
                        f"{self.source}: {path}: column {name!r} holds a value of "
                        f"{longest:,} bytes; a source may hold strings of at most "
                        f"{self.budget.string_chars:,}"
                    )
        measured, widths = set(strings), _slot_widths(meta)
        others = 0
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c, width in enumerate(widths):
                chunk = group.column(c)
                if chunk.path_in_schema in measured:
                    others += width * chunk.num_values
                elif chunk.physical_type == "BYTE_ARRAY":
                    others += _chunk_bound(chunk, width)
                else:  # a number decodes to its width per slot, whatever its encoding
                    others += max(chunk.total_uncompressed_size, width * chunk.num_values)
        return total + others

    def _over(self, what: str, value: int, limit: int, path: Path) -> None:
        if value > limit:
            raise BudgetError(
                f"{self.source}: reading {path} passes {limit:,} {what} (a source may cost at "
                "most that); the source is not shown"
            )


def check_files(files: Sequence[Path], config: str, source: str) -> None:
    """Raise BudgetError when reading `files` as `config` rows would exceed its budget."""
    meter = Meter(BUDGETS[config], source)
    meter.count_files(files)
    for path in files:
        meter.check(Path(path))


def _read_strings(path: Path, strings: list[str], threads: bool = False) -> pa.Table:
    """The top-level columns holding the string leaves `strings` (in name order, the order
    they are measured in), those leaves read as dictionaries: that never expands a value."""
    top = sorted({p.split(".", 1)[0] for p in strings})
    return pq.ParquetFile(path, read_dictionary=strings).read(columns=top, use_threads=threads)


def _open(path: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise HubError(unreadable(path, exc)) from None


def _check_names(path: Path, names: Sequence[str]) -> None:
    """A HubError naming a column the file holds twice: pyarrow reads such a file, and
    every later lookup by name fails with a KeyError naming neither file nor source."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise HubError(
                f"{path}: column {name!r} appears {list(names).count(name)} times; a results "
                "file holds each column once"
            )
        seen.add(name)


def _footer_bound(meta: pq.FileMetaData) -> int:
    """An upper bound of the decoded bytes, chunk by chunk (`_chunk_bound`)."""
    widths = _slot_widths(meta)
    total = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        total += sum(_chunk_bound(group.column(c), w) for c, w in enumerate(widths))
    return total


#: Encodings whose values take at most the bytes the page stores (levels, plain values,
#: lengths coded apart from the bytes). A dictionary index repeats a stored value, and
#: DELTA_BYTE_ARRAY stores each value as a prefix of the one before plus a suffix: one stored
#: 4,000-byte value with empty suffixes decodes to 4,000 bytes per row.
_STORED = frozenset({"PLAIN", "RLE", "BIT_PACKED", "DELTA_LENGTH_BYTE_ARRAY",
                     "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"})  # fmt: skip
_DICTIONARY = frozenset({"PLAIN_DICTIONARY", "RLE_DICTIONARY"})


def _chunk_bound(chunk: pq.ColumnChunkMetaData, width: int) -> int:
    """Bytes column chunk `chunk` takes once decoded, at most: its value slots (`width`
    bytes each, `_slot_widths`: nulls, and every element of a list, have one, stored in a
    few bits of levels), plus the bytes its values can hold. A chunk whose pages store every
    value decodes to at most its decompressed size; any other (a dictionary, a prefix code,
    an encoding not known here) to at most one decompressed chunk per slot, since no value is
    longer than the bytes it is decoded from, or than the value before it and those bytes."""
    size, slots = chunk.total_uncompressed_size, chunk.num_values
    stored = not chunk.has_dictionary_page and set(chunk.encodings) <= _STORED
    return (size if stored else size * max(1, slots)) + width * slots


def _measurable_chunk(chunk: pq.ColumnChunkMetaData) -> bool:
    """Whether reading `chunk` as a dictionary costs at most its decompressed size: its
    pages are a dictionary and indices, or values stored whole (a dictionary's fallback). A
    prefix-coded page would be decoded value by value (and pyarrow cannot read it as a
    dictionary at all), so its chunk is counted at its bound instead."""
    return set(chunk.encodings) <= _STORED | _DICTIONARY


#: Bytes one value takes once read, by physical type (a boolean counted as a byte; a string
#: its 4-byte offset or dictionary index; a fixed-length binary its length).
_WIDTHS = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12}


def _slot_widths(meta: pq.FileMetaData) -> list[int]:
    """Bytes one value of each column takes once read (`_WIDTHS`; 4 for a string)."""
    out = []
    for c in range(meta.num_columns):
        column = meta.schema.column(c)
        kind = column.physical_type
        fixed = kind == "FIXED_LEN_BYTE_ARRAY"
        out.append(max(1, column.length) if fixed else _WIDTHS.get(kind, 4))
    return out


def _slots(meta: pq.FileMetaData) -> int:
    """Bytes the value slots of every chunk take once read, strings not counted: what any
    read of the file allocates at least, told by the footer before anything is read."""
    widths = _slot_widths(meta)
    total = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        total += sum(w * group.column(c).num_values for c, w in enumerate(widths))
    return total


def is_string_like(kind: pa.DataType) -> bool:
    """Whether values of `kind` are variable-length bytes: every string and binary type, and
    a dictionary of them (a file written by pyarrow keeps a `dictionary<string>` column as
    one in its footer, and its one dictionary value may be referenced by every row)."""
    if pa.types.is_dictionary(kind):
        return is_string_like(kind.value_type)
    return any(
        check(kind)
        for check in (
            pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
            pa.types.is_large_binary, pa.types.is_fixed_size_binary,
            getattr(pa.types, "is_string_view", lambda _: False),
            getattr(pa.types, "is_binary_view", lambda _: False),
        )
    )  # fmt: skip


def _string_leaves(schema: pa.Schema) -> list[str]:
    """Column paths (as `read_dictionary` takes them) of every string leaf."""
    out: list[str] = []

    def walk(path: str, kind: pa.DataType) -> None:
        if is_string_like(kind):
            out.append(path)
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
            walk(f"{path}.list.element", kind.value_type)
        elif pa.types.is_struct(kind):
            for i in range(kind.num_fields):
                walk(f"{path}.{kind.field(i).name}", kind.field(i).type)

    for field in schema:
        walk(field.name, field.type)
    return out


def _dictionary_size(array: pa.Array) -> tuple[int, int]:
    """(bytes of the strings once decoded, longest string) of an array whose string leaves
    are dictionaries, without decoding them."""
    import pyarrow.compute as pc

    if isinstance(array, pa.DictionaryArray):
        if len(array.dictionary) == 0:
            return 0, 0
        lengths = pc.binary_length(array.dictionary)
        used = pc.take(lengths, array.indices)
        return int(pc.sum(used).as_py() or 0), int(pc.max(lengths).as_py() or 0)
    kind = array.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _dictionary_size(array.flatten())
    if pa.types.is_struct(kind):
        sizes = [_dictionary_size(array.field(i)) for i in range(kind.num_fields)]
        return sum(s for s, _ in sizes), max((m for _, m in sizes), default=0)
    return array.nbytes, 0
