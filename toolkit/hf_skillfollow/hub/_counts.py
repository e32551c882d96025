"""The counts a push publishes and renders the card from, at a cost that follows what it adds.

Fast path (the card's summary matches the repo's run listing): read the summary, the small
recent-counts file and the `cell_key` column of the main counts file; count the new runs;
update the summary; append to the recent file (merging it into the main file when it has
grown to a sixteenth of it). Otherwise (a repo written before these files, a run removed or
added by hand, an unreadable file): read every published count, reconcile it with the
listing (`_stats.reconcile`), and rebuild all three files from the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from hf_skillfollow.hub._layout import TRACES_DIR, TRANSITIONS_DIR
from hf_skillfollow.hub._plan import PushPlan, RepoState, published
from hf_skillfollow.hub._stats import (
    RECENT_PATH,
    STATS_PATH,
    empty_stats,
    merge_stats,
    published_run_ids,
    read_cell_keys,
    read_stats,
    reconcile,
    run_stats,
    stats_bytes,
)
from hf_skillfollow.hub._summary import SUMMARY_PATH, CardSummary

#: The recent-counts file is merged into the main one once it holds more rows than
#: 1/_RECENT_SHARE of it (and than _MIN_RECENT): a push reads and writes at most that many
#: rows, and a merge, which rewrites every row, comes once per that many new rows.
_RECENT_SHARE = 16
_MIN_RECENT = 256


def recent_limit(base_rows: int) -> int:
    """Rows the recent-counts file may hold beside a main file of `base_rows` rows."""
    return max(_MIN_RECENT, base_rows // _RECENT_SHARE)


@dataclass
class RepoCounts:
    """The counts after the push: the card's summary, every run's counts when asked for
    (or computed anyway), and the count files whose bytes changed (path -> bytes)."""

    summary: CardSummary
    table: pa.Table | None
    files: dict[str, bytes] = field(default_factory=dict)
    rebuilt: bool = False  # the summary was recomputed from every run's counts


def repo_counts(plan: PushPlan, state: RepoState, *, need_table: bool = False) -> RepoCounts:
    """Counts of every run the repo holds after `plan` (see the module doc).

    `need_table`: also return every run's counts as a table (the annotation and re-scoring
    sections of the card read them); this reads the main counts file but does not rewrite it.
    """
    listed = [p for p in state.files_in(TRANSITIONS_DIR) if p.endswith(".parquet")]
    new = merge_stats(
        run_stats(plan.new_transitions[p], plan.new_traces.get(p))
        for p in sorted(plan.new_transitions)
    )
    summary = CardSummary.parse(published(SUMMARY_PATH, state))
    if summary is not None:
        counts = _incremental(summary, listed, new, list(plan.new_transitions), state, need_table)
        if counts is not None:
            return counts
    return _rebuilt(state, listed, new, sorted([*listed, *plan.new_transitions]))


def _incremental(
    summary: CardSummary,
    listed: list[str],
    new: pa.Table,
    added: list[str],
    state: RepoState,
    need_table: bool,
) -> RepoCounts | None:
    """The fast path, or None when the published files do not describe the listed runs.

    `listed`: the repo's transitions files, sorted; `added`: those the push adds.
    """
    import bisect

    import pyarrow.compute as pc

    from hf_skillfollow.hub._summary import files_digest

    if summary.n_files != len(listed) or summary.files_digest != files_digest(listed):
        return None
    recent = _read(RECENT_PATH, state) if summary.recent_rows else empty_stats()
    base_data = published(STATS_PATH, state) if summary.base_rows else None
    keys = read_cell_keys(base_data) if base_data is not None else empty_stats()["cell_key"]
    if recent is None or recent.num_rows != summary.recent_rows:
        return None
    if keys is None or len(keys) != summary.base_rows:
        return None
    new_keys = new.column("cell_key").combine_chunks()
    old_keys = pa.chunked_array([*keys.chunks, *recent["cell_key"].chunks], pa.string())
    seen = new_keys.filter(pc.is_in(new_keys, value_set=old_keys.combine_chunks()))
    after = list(listed)
    for path in added:
        bisect.insort(after, path)
    summary.add(new, set(seen.to_pylist()), after)

    out = RepoCounts(summary, None)
    recent = merge_stats([recent, new])
    compact = recent.num_rows > recent_limit(summary.base_rows)
    base = None
    if compact or need_table:
        base = read_stats(base_data) if base_data is not None else empty_stats()
        if base is None:
            return None
    if compact:
        assert base is not None
        base, recent = merge_stats([base, recent]), empty_stats()
        out.files[STATS_PATH] = stats_bytes(base)
        out.files[RECENT_PATH] = stats_bytes(recent)
    elif new.num_rows:
        out.files[RECENT_PATH] = stats_bytes(recent)
    summary.recent_rows = recent.num_rows
    summary.base_rows = summary.base_rows if base is None else base.num_rows
    if need_table:
        out.table = merge_stats([base, recent])
    return out


def _rebuilt(state: RepoState, listed: list[str], new: pa.Table, after: list[str]) -> RepoCounts:
    """Every published count, reconciled with the listing, plus the new runs' counts;
    `listed` and `after` are the repo's transitions files before and after the push."""
    base, recent = _read(STATS_PATH, state), _read(RECENT_PATH, state)
    published_counts = [t for t in (base, recent) if t is not None]
    ids = published_run_ids(listed)
    traced = frozenset(published_run_ids(state.files_in(TRACES_DIR), TRACES_DIR))
    old = reconcile(merge_stats(published_counts), ids, state.read, state.name, traced)
    table = merge_stats([old, new])
    out = RepoCounts(CardSummary.of(table, after), table, rebuilt=True)
    if base is None or not base.equals(table):
        out.files[STATS_PATH] = stats_bytes(table)
    if published(RECENT_PATH, state) is not None and (recent is None or recent.num_rows):
        out.files[RECENT_PATH] = stats_bytes(empty_stats())
    return out


def _read(path: str, state: RepoState) -> pa.Table | None:
    data = published(path, state)
    return None if data is None else read_stats(data)
