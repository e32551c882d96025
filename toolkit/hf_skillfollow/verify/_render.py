"""`verify` output: per cell and per run counts, and every disagreeing row, as text/JSON/Markdown."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from hf_skillfollow._escape import for_markdown, for_terminal
from hf_skillfollow.verify._core import RowCheck, Verification
from hf_skillfollow.verify._inputs import Row
from hf_skillfollow.verify._status import mark

FORMATS = ("table", "json", "markdown")


def summary(v: Verification) -> dict[str, Any]:
    """Everything the output shows, as plain JSON-ready values."""
    return {
        "status": "disagree" if v.disagreements else "agree",
        **v.provenance(),
        "benchmark_releases": v.releases,
        "rows_checked": len(v.checked),
        "rows_agreeing": sum(r.agrees for r in v.checked),
        "rows_without_traces": len(v.unchecked),
        "answers_rescored": v.rescored,
        "cells": _groups(v.checked, v.unchecked, ("cell_id", "benchmark")),
        "runs": _groups(v.checked, v.unchecked, ("run_id", "cell_id")),
        "disagreements": [
            {
                "run_id": r.run_id,
                "cell_id": r.cell_id,
                "task_id": r.task_id,
                "arm": arm,
                "recorded": r.arms[arm].recorded,
                "rescored": r.arms[arm].rescored,
                "reason": r.arms[arm].reason,
            }
            for r, arm in v.disagreements
        ],
    }


def _groups(
    checked: Iterable[RowCheck], unchecked: Iterable[Row], keys: tuple[str, ...]
) -> list[dict[str, Any]]:
    groups: dict[tuple[str, ...], dict[str, Any]] = {}

    def group(item: RowCheck | Row) -> dict[str, Any]:
        key = tuple(getattr(item, k) for k in keys)
        zero = {"rows_checked": 0, "rows_agreeing": 0, "rows_without_traces": 0}
        return groups.setdefault(key, dict(zip(keys, key, strict=True)) | zero)

    for r in checked:
        g = group(r)
        g["rows_checked"] += 1
        g["rows_agreeing"] += int(r.agrees)
    for row in unchecked:
        group(row)["rows_without_traces"] += 1
    return [groups[k] for k in sorted(groups)]


def render(v: Verification, fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {list(FORMATS)}")
    data = summary(v)
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return _markdown(data) if fmt == "markdown" else _table(data)


def headline(data: dict[str, Any]) -> str:
    """The summary line: how many rows agree, and how many were not re-scored at all."""
    verdict = (
        "all agree"
        if data["status"] == "agree"
        else f"{len(data['disagreements'])} disagreement(s)"
    )
    total = data["rows_checked"] + data["rows_without_traces"]
    return (
        f"{data['rows_agreeing']}/{data['rows_checked']} rows agree ({verdict}); "
        f"{data['rows_without_traces']} of {total} row(s) not re-scored (no traces); "
        f"{data['answers_rescored']} answer(s) re-scored now, the rest from the state file"
    )


def _provenance(data: dict[str, Any], escape: Callable[[object], str]) -> str:
    releases = ", ".join(sorted(set(data["benchmark_releases"].values()))) or "none"
    return escape(
        f"verification {data['verification_id']} by {data['verified_by']} on {data['machine']}, "
        f"{data['verified_at']}: hf-skillfollow {data['toolkit_version']}, scorer version "
        f"{data['scorer_version']}, benchmark release(s) {releases}"
    )


def _rows(
    data: dict[str, Any], escape: Callable[[object], str]
) -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
    """Table rows; ids, benchmarks and reasons are submitter text, written with `escape`."""
    e = escape

    def counts(g: dict[str, Any]) -> list[str]:
        total = g["rows_checked"] + g["rows_without_traces"]
        return [str(g["rows_checked"]), str(g["rows_agreeing"]), str(g["rows_without_traces"]),
                mark(g["rows_checked"], g["rows_agreeing"], total)]  # fmt: skip

    cells = [[e(g["cell_id"]), e(g["benchmark"]), *counts(g)] for g in data["cells"]]
    runs = [[e(g["run_id"]), e(g["cell_id"]), *counts(g)] for g in data["runs"]]
    dis = [
        [e(d["run_id"]), e(d["task_id"]), d["arm"], _bit(d["recorded"]), _bit(d["rescored"]),
         e(d["reason"])]
        for d in data["disagreements"]
    ]  # fmt: skip
    return cells, runs, dis


_COUNT_HEADERS = ["rows checked", "rows agreeing", "without traces", "re-scored"]
_DIS_HEADERS = ["run_id", "task_id", "arm", "recorded", "re-scored", "reason"]


def _bit(value: bool) -> str:
    return "pass" if value else "fail"


def _markdown(data: dict[str, Any]) -> str:
    cells, runs, dis = _rows(data, for_markdown)
    parts = [
        "## Verification",
        _provenance(data, for_markdown),
        f"**{headline(data)}**",
        "### Cells",
        _md_table(["cell_id", "benchmark", *_COUNT_HEADERS], cells),
        "### Runs",
        _md_table(["run_id", "cell_id", *_COUNT_HEADERS], runs),
        "### Disagreeing rows",
        _md_table(_DIS_HEADERS, dis) if dis else "_none_",
    ]
    return "\n\n".join(parts) + "\n"


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    """Cells are Markdown already (submitter text escaped by `_rows`)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _table(data: dict[str, Any]) -> str:
    from rich.console import Console
    from rich.table import Table

    cells, runs, dis = _rows(data, for_terminal)
    console = Console(record=True, width=160, force_terminal=False, color_system=None)
    with console.capture() as capture:
        console.print(_provenance(data, for_terminal))
        for title, headers, rows in (
            ("cells", ["cell_id", "benchmark", *_COUNT_HEADERS], cells),
            ("runs", ["run_id", "cell_id", *_COUNT_HEADERS], runs),
            ("disagreeing rows", _DIS_HEADERS, dis),
        ):
            if not rows:
                continue
            table = Table(title=title, title_justify="left")
            for header in headers:
                table.add_column(header, overflow="fold")
            for row in rows:
                table.add_row(*row)
            console.print(table)
        console.print(headline(data))
    return capture.get()
