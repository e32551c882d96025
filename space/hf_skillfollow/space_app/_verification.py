"""Re-scored marks on the board: read published verification records, never re-score.

The Space runs no submitted code. It reads the `verifications` records that
`hf-skillfollow verify` wrote and `push` published beside the runs, and compares each
record's re-scored verdicts with the bits published now (docs/verify.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from hf_skillfollow._escape import for_html as escape
from hf_skillfollow.space_app._shown import capped as _capped

ABOUT_MD = """
## Re-scored marks

The rows' `se_correct` / `sd_correct` bits are whatever the submitter's machine wrote. Anyone
can check them: `hf-skillfollow verify <repo or run>` re-extracts every SE and SD final answer
from the published traces, scores it again in the sandbox with the scorer version and benchmark
release recorded in the row, and compares with the published bits. Its record, published
beside the run with `hf-skillfollow push`, names the verifier, the machine, the toolkit, the
scorer version, the benchmark release and the date.

The **Re-scored** column shows, per cell, the published records compared with the bits
published *now*: **✓ 80/80** every row re-scored and agreeing, **✗ 77/80** some re-scored rows
disagree (the drill-down lists them with both verdicts), **◐** only part of the rows
re-scored, or *not re-scored*. *Show: re-scored only* keeps the cells with a record.

This Space never runs submitted code: it only reads records. A record counts only for the
rows of the repo it was published in: a third party's re-scoring lives in their own repo,
beside their copy of the run, and shows as that repo's row ("Re-scored by <repo>"), never on
the owner's. Whoever can write to a results repo can publish a record in it, including the
submitter, so a ✓ proves that the published
bits are what the published answers score to *on the verifier's machine*; it does not prove
that the answers came from the named model, and a record is only as trustworthy as its
verifier. Anyone can repeat the check with `hf-skillfollow verify`; a ✗ that you can reproduce
means the published bits do not follow from the published answers.
"""

RESCORED = "rescored"  # display column
NOT_RESCORED = "not re-scored"
AMBIGUOUS = "not shown: cell_id names several cells"
TIP = (
    "Published verification records (hf-skillfollow verify) compared with the published bits: "
    "✓ every row re-scored and agreeing, ✗ some re-scored rows disagree, ◐ partly re-scored"
)
_LEAD = "<b>Re-scored</b>"
RESCORED_FLAG = "_rescored"  # cell has at least one re-scored row (the filter)
RECORD_GLOBS = ("verifications/*.parquet", "data/verifications/*.parquet")


@dataclass
class Rescoring:
    """Per-row status (published vs re-scored) for every loaded row with a record."""

    status: pa.Table | None
    records: pa.Table | None

    @property
    def empty(self) -> bool:
        return self.records is None or self.records.num_rows == 0


def load_rescoring(tables: Mapping[str, pa.Table]) -> tuple[Rescoring, list[str]]:
    """Each source's records joined with that source's rows only: a record counts for the
    rows of the repo it was published in, never for another source's rows that happen to
    share a run_id (docs/verify.md, "Re-scoring someone else's run"). A bad record file is a
    warning naming its source, not an error."""
    from hf_skillfollow.space_app._sources import SOURCE, plain_rows, with_source
    from hf_skillfollow.verify._status import row_status

    statuses, found, warnings = [], [], []
    for source, rows in tables.items():
        try:
            parts = _records_of(source)
        except Exception as exc:  # one bad record must not take the board down
            warnings.append(
                f"Verification records of '{source}' skipped: {type(exc).__name__}: {str(exc)[:300]}"
            )
            continue
        if not parts or rows.num_rows == 0:
            continue
        records = with_source(pa.concat_tables(parts), source)
        found.append(records)
        status = row_status(plain_rows(rows), records.drop_columns([SOURCE]))
        statuses.append(with_source(status, source))
    if not found:
        return Rescoring(None, None), warnings
    status = pa.concat_tables(statuses, promote_options="permissive").unify_dictionaries()
    records = pa.concat_tables(found, promote_options="permissive").unify_dictionaries()
    return Rescoring(status, records), warnings


def _records_of(source: str) -> list[pa.Table]:
    from hf_skillfollow.space_app._sources import is_local
    from hf_skillfollow.verify._record import is_record_file

    if not is_local(source):
        return _hub_records(source)
    path = Path(source).expanduser()
    if path.is_file():
        return []
    import threading

    import pyarrow.parquet as pq

    from hf_skillfollow._files import inside_all, regular_file
    from hf_skillfollow.hub._budget import BUDGETS, Meter
    from hf_skillfollow.schema import validate_verifications

    # Counted, and kept inside the source, from the listing: telling a record from another
    # file reads its footer.
    found = sorted({f for pattern in RECORD_GLOBS for f in path.rglob(pattern)})
    meter, lock = Meter(BUDGETS["verifications"], source), threading.Lock()
    meter.count_files(found)
    files = [f for f in inside_all(found, path) if is_record_file(f)]
    # Each held to the budget on the read that is used, as a run's rows and traces are
    # (`Meter.read_whole`): an 80-row record's footer bound is ~400 KB for ~40 KB of rows.
    return [
        validate_verifications(meter.read_whole(f, pq.ParquetFile(regular_file(f)), lock), str(f))
        for f in files
    ]


def _hub_records(repo_id: str) -> list[pa.Table]:
    from hf_skillfollow.hub._load import load_verifications

    table = load_verifications(repo_id)
    return [] if table is None else [table]


def with_rescored(
    cells: pd.DataFrame, rescoring: Rescoring, *, per_run: bool, across: bool = False
) -> pd.DataFrame:
    """`cells` plus the display mark and the filter flag, per source and cell (or per source,
    cell and run; `across`: per cell of the view pooled across sources). A cell_id that
    names several cells in one place gets no mark: whose rows a record checked is ambiguous."""
    from hf_skillfollow.space_app._sources import SOURCE
    from hf_skillfollow.verify._status import group_counts

    out = cells.copy()
    if rescoring.status is None or out.empty:
        out[RESCORED] = NOT_RESCORED
        out[RESCORED_FLAG] = np.zeros(len(out), dtype=bool)
        return out
    keys = ([] if across else [SOURCE]) + (["cell_id", "run_id"] if per_run else ["cell_id"])
    status = rescoring.status
    if SOURCE in status.column_names:
        status = status.set_column(
            status.schema.get_field_index(SOURCE), SOURCE, status[SOURCE].cast(pa.string())
        )
    counts = group_counts(status, keys).to_pandas()
    merged = out[keys].astype(str).merge(counts.astype({k: str for k in keys}), on=keys, how="left")
    ambiguous = out[keys].astype(str).duplicated(keep=False).to_numpy()
    out[RESCORED] = np.where(
        ambiguous, AMBIGUOUS, merged["rescored"].fillna(NOT_RESCORED).to_numpy(dtype=object)
    )
    out[RESCORED_FLAG] = (merged["rescored_rows"].fillna(0).to_numpy(dtype=float) > 0) & ~ambiguous
    return out


def mark_html(row: dict) -> str:
    """The table cell: ✓/✗/◐ with the counts, or a muted "not re-scored"."""
    text = str(row.get(RESCORED) or NOT_RESCORED)
    cls = {"✓": "sf-ok", "✗": "sf-flag", "◐": "sf-sub"}.get(text[:1], "sf-sub")
    return f'<span class="{cls}">{escape(text)}</span>'


def drill_html(rescoring: Rescoring, cell: pd.Series, per_run: bool) -> str:
    """The drill-down's re-scoring section: mark, records, and every disagreeing task."""
    from hf_skillfollow.verify._status import disagreeing_rows, group_counts

    if rescoring.status is None:
        return (
            f'<p class="sf-rescored">{_LEAD}: not re-scored (no verification record published).</p>'
        )
    import pyarrow.compute as pc

    from hf_skillfollow.space_app._sources import cell_sources

    if str(cell.get(RESCORED)) == AMBIGUOUS:
        return f'<p class="sf-rescored">{_LEAD}: {escape(AMBIGUOUS)}.</p>'
    sources = pa.array(cell_sources(cell))
    mask = pc.and_(
        pc.equal(rescoring.status["cell_id"], str(cell["cell_id"])),
        pc.is_in(rescoring.status["source"].cast(pa.string()), sources),
    )
    if per_run:
        mask = pc.and_(mask, pc.equal(rescoring.status["run_id"], str(cell["run_id"])))
    status = rescoring.status.filter(mask)
    if status.num_rows == 0:
        return ""
    counts = group_counts(status, ["cell_id"]).to_pylist()[0]
    checked = status.filter(status["checked"])["source"].cast(pa.string()).unique().to_pylist()
    by = (
        " by " + " and ".join(f"<code>{escape(s)}</code>" for s in sorted(checked))
        if checked
        else ""
    )
    parts = [
        f'<div class="sf-rescored"><p>{_LEAD}{by}: <b>{escape(counts["rescored"])}</b> '
        f"({counts['rescored_rows']} of {counts['rows']} rows re-scored, "
        f"{counts['agreeing_rows']} agree with the published bits)</p>"
    ]
    parts += [f'<p class="sf-sub">{line}</p>' for line in _record_lines(status)]
    bad = disagreeing_rows(status)
    if bad:
        parts.append("<p><b>Disagreeing tasks</b> (published bit vs re-scored verdict)</p>")
        parts.append(_table(bad[:SHOWN_DISAGREEING]))
        if len(bad) > SHOWN_DISAGREEING:
            parts.append(
                f'<p class="sf-sub">… and {len(bad) - SHOWN_DISAGREEING:,} more disagreeing '
                "arms (the counts above include them)</p>"
            )
    return "".join(parts) + "</div>"


#: Disagreeing arms listed in a drill-down: a source's own record disagreeing with each of
#: 20,000 rows (0.4 MB of files) made the drill-down's header 19 MB.
SHOWN_DISAGREEING = 100


#: Records listed in a drill-down: a record may give every row its own id, so one line per
#: distinct record is one line per row.
SHOWN_RECORDS = 10


def _record_lines(status: pa.Table) -> list[str]:
    """One line per record behind the mark (the newest `SHOWN_RECORDS`, then how many more),
    every string of it the publisher's, cut as the table cuts names (`_shown.capped`)."""
    keys = ["verification_id", "verified_by", "verified_at", "toolkit_version", "scorer_version",
            "benchmark_release"]  # fmt: skip
    seen = status.filter(status["checked"])
    seen = seen.select(keys).append_column("source", seen["source"].cast(pa.string()))
    rows = {tuple(r.values()): r for r in seen.to_pylist()}
    ordered = sorted(rows.values(), key=lambda r: str(r["verified_at"]), reverse=True)
    lines = [
        f"record <code>{escape(_capped(r['verification_id']))}</code> by "
        f"{escape(_capped(r['verified_by']))}, {escape(_capped(r['verified_at']))}, published in "
        f"<code>{escape(_capped(r['source']))}</code>: hf-skillfollow "
        f"{escape(_capped(r['toolkit_version']))}, scorer version "
        f"{escape(_capped(r['scorer_version']))}, benchmark release "
        f"<code>{escape(_capped(r['benchmark_release']))}</code>"
        for r in ordered[:SHOWN_RECORDS]
    ]
    if len(ordered) > SHOWN_RECORDS:
        lines.append(f"… and {len(ordered) - SHOWN_RECORDS:,} more records")
    return lines


def _table(rows: list[dict[str, object]]) -> str:
    head = "".join(
        f"<th>{h}</th>" for h in ("task_id", "run_id", "arm", "published", "re-scored", "reason")
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{escape(str(v))}</td>"
            for v in (
                _capped(r["task_id"]),
                _capped(r["run_id"]),
                str(r["arm"]).upper(),
                _bit(r["published"]),
                _bit(r["rescored"]),
                str(r["reason"])[:300],
            )  # fmt: skip
        )
        + "</tr>"
        for r in rows
    )
    return f'<table class="sf-small sf-rescored-rows"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _bit(value: object) -> str:
    return "pass" if value else "fail"
