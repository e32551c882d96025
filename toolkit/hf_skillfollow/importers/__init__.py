"""`hf-skillfollow import`: runs another harness made, as paired run folders (docs/import.md).

An importer (`registries.IMPORTERS`: harbor, skill-creator, benchflow) reads one format's
files into `Trial`s; `_pairing` pairs them; `_activation` asks the transcript detectors what
each trial activated; `_runs` writes run folders through the runner's `store.RunStore`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from hf_skillfollow.importers._base import (
    LOADING_MODES,
    Collected,
    Graded,
    ImportInputError,
    ImportOptions,
    ImportRequest,
    Judging,
    Trial,
)
from hf_skillfollow.importers._runs import ImportResult

#: `imported:<format>` (another harness ran the trials) or `run:<harness>` (this toolkit did)
_PROVENANCE = re.compile(r"(imported|run):[a-z0-9][a-z0-9_.-]{0,39}")

__all__ = [
    "LOADING_MODES",
    "Collected",
    "Graded",
    "ImportInputError",
    "ImportOptions",
    "ImportRequest",
    "ImportResult",
    "Judging",
    "Trial",
    "import_runs",
]


def import_runs(
    fmt: str,
    with_paths: Sequence[Path] = (),
    without_paths: Sequence[Path] = (),
    options: ImportOptions | None = None,
    *,
    output_dir: Path = Path("runs"),
    paths: Sequence[Path] = (),
    on_total: Callable[[int], None] | None = None,
    on_pair: Callable[[bool], None] | None = None,
    on_read: Callable[[int], None] | None = None,
    provenance: str | None = None,
    judging: Judging | None = None,
    set_aside_bad_records: bool = False,
) -> ImportResult:
    """Import one format's trials into run folders under `output_dir`; return what was done.

    `fmt` is a `registries.IMPORTERS` name. For `harbor` and `benchflow`, `with_paths` and
    `without_paths` are job or trial folders (searched recursively, bounded) of the
    with-skills and the without-skills arm: the arm of a trial is the list its path is in,
    never its folder's name; for `harbor`, `paths` are jobs that ran both arms (two agent
    entries that differ only in skills: each trial's arm is whether its recorded agent had
    skills, `importers._harbor._JobArms`). For `skill-creator`, `paths` are workspaces (the
    arms are its `with_skill` and `without_skill`/`old_skill` folders). The result's `run_dirs` are
    ordinary run folders (one per repeat) that `report`, `push`, `verify` and the board read;
    importing the same trials again adds nothing, and an interrupted import resumes.
    `on_total(n)` is called once with the number of steps, `on_pair(error)` after each: one
    per pair written (`error`: the pair holds an error row) and, without `options.skills`,
    before them one per pair read (every transcript is read first, `error` False).
    `on_read(n)`, before all of them, after each trial's result file read (harbor, benchflow):
    `n` files read so far.
    `provenance` is the rows' `provenance` column: `imported:<fmt>` by default (trials another
    harness ran); `run:<harness>` when hf-skillfollow itself ran the trials through that
    harness (`run --harness harbor` passes `run:harbor`), which the board and report do not
    call imported.
    `judging`: the trials' verdicts are the blinded judge's (`Judging`), not their rewards;
    the judge is part of the cell, and the traces carry its record, as in a judged run.
    `set_aside_bad_records`: bad lines of the run folders' `records.jsonl` (not JSON, not a
    record of the schema, of another run) go to `records.rejected` and their pairs are
    written again; else the first is an error naming file:line (not part of the cell).
    Raises `ImportInputError` (one line naming the file, field or flag) on bad input.
    """
    from hf_skillfollow.importers._runs import write_runs
    from hf_skillfollow.registries import IMPORTERS

    options = options or ImportOptions()
    if options.loading not in LOADING_MODES:
        raise ImportInputError(
            f"--loading {options.loading!r}: choose one of {', '.join(LOADING_MODES)}"
        )
    if not 0.0 <= options.pass_threshold <= 1e9:
        raise ImportInputError(f"--pass-threshold {options.pass_threshold}: not a reward level")
    if provenance is not None and not _PROVENANCE.fullmatch(provenance):
        raise ImportInputError(
            f"provenance {provenance[:60]!r}: not imported:<format> or run:<harness>"
        )
    try:
        collect = IMPORTERS.resolve(fmt)
    except ValueError as exc:
        raise ImportInputError(str(exc)) from None
    request = ImportRequest(tuple(with_paths), tuple(without_paths), tuple(paths), options,
                            on_read)  # fmt: skip
    collected = collect(request)
    return write_runs(fmt, collected, options, Path(output_dir), on_pair, on_total, provenance,
                      judging, set_aside=set_aside_bad_records)  # fmt: skip
