"""`verify` output: per cell and per run counts, and every disagreeing row, as text/JSON/Markdown."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

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


def _headline(data: dict[str, Any]) -> str:
    verdict = (
        "all agree"
        if data["status"] == "agree"
        else f"{len(data['disagreements'])} disagreement(s)"
    )
    return (
        f"{data['rows_agreeing']}/{data['rows_checked']} rows agree ({verdict}); "
        f"{data['rows_without_traces']} row(s) without traces not checked; "
        f"{data['answers_rescored']} answer(s) re-scored now, the rest from the state file"
    )


def _provenance(data: dict[str, Any]) -> str:
    releases = ", ".join(sorted(set(data["benchmark_releases"].values()))) or "none"
    return (
        f"verification {data['verification_id']} by {data['verified_by']} on {data['machine']}, "
        f"{data['verified_at']}: hf-skillfollow {data['toolkit_version']}, scorer version "
        f"{data['scorer_version']}, benchmark release(s) {releases}"
    )


def _rows(data: dict[str, Any]) -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
    def counts(g: dict[str, Any]) -> list[str]:
        total = g["rows_checked"] + g["rows_without_traces"]
        return [str(g["rows_checked"]), str(g["rows_agreeing"]), str(g["rows_without_traces"]),
                mark(g["rows_checked"], g["rows_agreeing"], total)]  # fmt: skip

    cells = [[g["cell_id"], g["benchmark"], *counts(g)] for g in data["cells"]]
    runs = [[g["run_id"], g["cell_id"], *counts(g)] for g in data["runs"]]
    dis = [
        [d["run_id"], d["task_id"], d["arm"], _bit(d["recorded"]), _bit(d["rescored"]), d["reason"]]
        for d in data["disagreements"]
    ]
    return cells, runs, dis


_COUNT_HEADERS = ["rows checked", "rows agreeing", "without traces", "re-scored"]
_DIS_HEADERS = ["run_id", "task_id", "arm", "recorded", "re-scored", "reason"]


def _bit(value: bool) -> str:
    return "pass" if value else "fail"


def _markdown(data: dict[str, Any]) -> str:
    cells, runs, dis = _rows(data)
    parts = [
        "## Verification",
        _provenance(data),
        f"**{_headline(data)}**",
        "### Cells",
        _md_table(["cell_id", "benchmark", *_COUNT_HEADERS], cells),
        "### Runs",
        _md_table(["run_id", "cell_id", *_COUNT_HEADERS], runs),
        "### Disagreeing rows",
        _md_table(_DIS_HEADERS, dis) if dis else "_none_",
    ]
    return "\n\n".join(parts) + "\n"


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _table(data: dict[str, Any]) -> str:
    from rich.console import Console
    from rich.table import Table

    cells, runs, dis = _rows(data)
    console = Console(record=True, width=160, force_terminal=False, color_system=None)
    with console.capture() as capture:
        console.print(_provenance(data))
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
        console.print(_headline(data))
    return capture.get()
