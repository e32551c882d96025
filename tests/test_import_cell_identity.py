"""An imported cell's identity, field by field: every setting that changes what was measured
changes the cell id, and the run's own details (trial folders, start times) do not."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hf_skillfollow.importers._base import ImportOptions, Trial
from hf_skillfollow.importers._pairing import pair_trials
from hf_skillfollow.importers._runs import _identity


def _trial(arm: str, **over: object) -> Trial:
    base = dict(arm=arm, task="csv-clean", checksum=f"sum-{arm}", started_at="2026-01-01T00:00:00",
                passed=True, error=None, source=Path(f"/jobs/{arm}/csv-clean__a"),
                agent="claude-code", agent_version="2.1.0", model="anthropic/m")  # fmt: skip
    return Trial(**{**base, **over})  # type: ignore[arg-type]


def _cid(
    se: dict | None = None, sd: dict | None = None, options: ImportOptions | None = None,
    **kw: str,
) -> str:  # fmt: skip
    args = {"fmt": "harbor", "harness": "harbor", "pool_name": "pool", "pool_hash": "p1",
            "provenance": "imported:harbor", **kw}  # fmt: skip
    pairing = pair_trials([_trial("se", **(se or {})), _trial("sd", **(sd or {}))])
    return _identity(pairing=pairing, options=options or ImportOptions(), **args)["cell_id"]


BASE = _cid()


@pytest.mark.parametrize(
    "changed",
    [
        {"provenance": "run:harbor"},
        {"harness": "benchflow"},
        {"pool_hash": "p2"},
        {"se": {"checksum": "other"}},
        {"sd": {"checksum": "other"}},
        {"se": {"task": "t2"}, "sd": {"task": "t2"}},
        {"se": {"agent": "codex"}, "sd": {"agent": "codex"}},
        {"se": {"agent_version": "2.2.0"}, "sd": {"agent_version": "2.2.0"}},
        {"se": {"model": "anthropic/n"}, "sd": {"model": "anthropic/n"}},
        {"se": {"dataset": "skillsbench@1"}, "sd": {"dataset": "skillsbench@1"}},
        {"options": ImportOptions(pass_threshold=0.5)},
        {"options": ImportOptions(pass_rate_threshold=0.8)},
        {"options": ImportOptions(trigger="instructions")},
        {"options": ImportOptions(loading="inject")},
        {"options": ImportOptions(benchmark="skillsbench")},
        {"options": ImportOptions(baseline="old_skill")},
    ],
    ids=lambda c: "-".join(f"{k}" for k in c),
)
def test_each_measured_setting_changes_the_cell(changed: dict) -> None:
    assert _cid(**changed) != BASE


def test_the_runs_own_details_do_not_change_the_cell() -> None:
    same = {"source": Path("/elsewhere/x"), "started_at": "2026-02-02T00:00:00"}
    assert _cid(se=same, sd=same) == BASE


def test_every_option_field_is_covered() -> None:
    """A new ImportOptions field must be added to the parametrised list above (or here, when
    it only says where to read files from)."""
    where_from = {"skills", "tasks"}  # their content enters as pool_hash / checksums
    tested = {"pass_threshold", "pass_rate_threshold", "trigger", "loading", "benchmark",
              "baseline"}  # fmt: skip
    assert {f.name for f in dataclasses.fields(ImportOptions)} == tested | where_from
