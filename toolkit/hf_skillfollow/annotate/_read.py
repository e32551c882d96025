"""Read annotations back: from run directories and annotation folders (annotations.parquet),
results repo folders (data/annotations/*.parquet) and Hub ids (the `annotations` config)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from hf_skillfollow.annotate._labels import check_annotation_rows
from hf_skillfollow.annotate._store import TABLE

ANNOTATIONS_DIR = "data/annotations"


def read_annotations(*sources: str | Path, required: bool = False) -> pa.Table:
    """All annotations rows of `sources`, validated; an empty table when none exist (unless
    `required`, then a ValueError naming the sources)."""
    from hf_skillfollow.schema import ANNOTATIONS_SCHEMA

    parts: list[pa.Table] = []
    for source in sources:
        parts.extend(_read_one(source))
    if not parts:
        if required:
            raise ValueError(
                f"no annotations in {', '.join(map(str, sources))} (run `hf-skillfollow annotate` first)"
            )
        return ANNOTATIONS_SCHEMA.empty_table()
    table = pa.concat_tables(parts)
    return _latest_per_key(table)


def _read_one(source: str | Path) -> list[pa.Table]:
    import pyarrow.parquet as pq

    from hf_skillfollow._files import inside
    from hf_skillfollow.schema import validate_annotations

    def checked(table: pa.Table, where: str) -> pa.Table:
        table = validate_annotations(table, where)
        check_annotation_rows(table, where, names=False)  # a long name is cut where shown
        return table

    path = Path(source).expanduser()
    if path.is_file():
        return [checked(pq.read_table(path), str(path))] if path.name == TABLE else []
    if path.is_dir():
        files = sorted(p for p in path.rglob(TABLE) if p.is_file())
        files += sorted(
            p for p in path.rglob("*.parquet")
            if p.is_file() and f"{ANNOTATIONS_DIR}/" in p.as_posix()
        )  # fmt: skip
        # A folder of runs or a results repo may be someone else's: a link in it to a file
        # elsewhere on this machine is refused, as for the rows (`sources`).
        return [checked(pq.read_table(inside(f, path)), str(f)) for f in files]
    from hf_skillfollow.hub import load_annotations

    table = load_annotations(str(source))
    return [checked(table, str(source))] if table is not None and table.num_rows else []


def _latest_per_key(table: pa.Table) -> pa.Table:
    """One row per (run, task, repeat, annotator): a key found in two places counts once."""
    from hf_skillfollow.schema import ANNOTATION_KEY

    seen: dict[tuple[object, ...], int] = {}
    keys = zip(*(table.column(k).to_pylist() for k in ANNOTATION_KEY), strict=True)
    for i, key in enumerate(keys):
        seen[key] = i
    return table.take(sorted(seen.values()))
