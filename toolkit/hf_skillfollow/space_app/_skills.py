"""The per-skill view: for a library maintainer the unit is the skill, not the cell.

For each skill, across every cell of a source: on how many tasks it came back (searched or
activated) and in which cells; the paired outcome where it was the only skill the SE arm
received (b, c and RAE on those tasks, so a flip is credited to one skill, never to every
hit of a top-3); and its trigger rate on its own evals (`skill-evals` tasks `<skill>/<id>`),
which shows a skill that never triggers where it should. Computed from the transitions'
`skills_returned` alone when the tab is first opened: no trace is read.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hf_skillfollow._escape import for_html as escape
from hf_skillfollow.metrics._imported import violated_rows
from hf_skillfollow.space_app._sources import SOURCE
from hf_skillfollow.space_app._table import _capped, pp

#: Cells listed per skill (the rest are counted); skills listed (most received first).
CELLS_SHOWN = 8
MAX_SKILLS = 500
SKILL_EVALS = "skill-evals"
_COLUMNS = ("cell_id", "task_id", "benchmark", "skill_pool", "se_correct", "sd_correct",
            "returned", "skills_returned")  # fmt: skip


def skill_frame(tables: dict[str, pa.Table], cells: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, skill pool, skill): received, cells, alone b/c/n/RAE, own evals."""
    parts = [_source_skills(source, table) for source, table in tables.items()]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame()
    rows = pd.concat(parts, ignore_index=True)
    keys = _cell_keys(cells)
    rows["cell"] = [
        keys.get((s, c), "") for s, c in zip(rows[SOURCE], rows["cell_id"], strict=True)
    ]
    group = ["source", "skill_pool", "skill"]
    received = rows[rows["received"]]
    alone = received[received["alone"]]
    own = rows[rows["own_eval"]]
    by_skill = received.groupby(group, sort=False)
    out = by_skill["task_id"].size().rename("received").to_frame()
    out["cells"] = by_skill["cell"].apply(lambda c: sorted(set(c) - {""}))
    counts = (
        alone.assign(
            b=alone["se_correct"] & ~alone["sd_correct"],
            c=~alone["se_correct"] & alone["sd_correct"],
        )
        .groupby(group, sort=False)[["b", "c"]]
        .agg(["sum", "size"])
    )
    out["alone_n"] = counts[("b", "size")] if len(counts) else 0
    out["alone_b"] = counts[("b", "sum")] if len(counts) else 0
    out["alone_c"] = counts[("c", "sum")] if len(counts) else 0
    evals = own.groupby(group, sort=False)["received"].agg(["sum", "size"])
    out = out.join(evals.rename(columns={"sum": "own_hits", "size": "own_evals"}), how="outer")
    out = out.reset_index()
    for name in ("received", "alone_n", "alone_b", "alone_c", "own_hits", "own_evals"):
        out[name] = out[name].fillna(0).astype(int)
    out["cells"] = out["cells"].map(lambda c: c if isinstance(c, list) else [])
    n = out["alone_n"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["alone_rae"] = np.where(n > 0, 100 * (out["alone_b"] - out["alone_c"]) / n, np.nan)
    return out.sort_values(["received", "skill"], ascending=[False, True]).reset_index(drop=True)


def _source_skills(source: str, table: pa.Table) -> pd.DataFrame:
    """(row, skill) pairs of one source: every skill each SE arm received, plus each
    skill-evals task under its own skill (received or not)."""
    names = [c for c in _COLUMNS if c in table.column_names]
    if "skills_returned" not in names or table.num_rows == 0:
        return pd.DataFrame()
    if "arm_integrity" in table.column_names:  # as the metrics: a violating pair is left out
        table = table.filter(pc.invert(violated_rows(table)))
    own = pc.equal(table["benchmark"], SKILL_EVALS)
    returned = pc.fill_null(table["returned"], False)
    t = table.filter(pc.or_(returned, pc.fill_null(own, False))).select(names)
    if t.num_rows == 0:
        return pd.DataFrame()
    frame = t.to_pandas()
    got = frame["skills_returned"].map(lambda s: list(dict.fromkeys(s)) if s is not None else [])
    frame["alone"] = got.map(len) == 1
    frame["_got"] = got
    frame["_own_skill"] = np.where(
        frame["benchmark"] == SKILL_EVALS, frame["task_id"].str.split("/", n=1).str[0], None
    )
    pairs = frame.explode("_got")
    pairs = pairs[pairs["_got"].notna()].rename(columns={"_got": "skill"})
    pairs["received"] = True
    pairs["own_eval"] = pairs["skill"] == pairs["_own_skill"]
    # own evals on which the skill did not come back: the misses of its trigger rate
    mine = frame[frame["_own_skill"].notna()]
    hit = [s in g for s, g in zip(mine["_own_skill"], mine["_got"], strict=True)]
    missed = mine.loc[~np.array(hit, dtype=bool)]
    missed = missed.assign(skill=missed["_own_skill"], received=False, own_eval=True)
    keep = ["cell_id", "task_id", "skill_pool", "se_correct", "sd_correct", "alone", "skill",
            "received", "own_eval"]  # fmt: skip
    both = pd.concat([pairs[keep], missed[keep]], ignore_index=True)
    both[["se_correct", "sd_correct"]] = both[["se_correct", "sd_correct"]].astype(bool)
    both[SOURCE] = source
    both["skill"] = both["skill"].astype(str)
    return both


def _cell_keys(cells: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(source, cell_id) -> drill-down key, for cell_ids that name one cell in their source."""
    if cells.empty:
        return {}
    pairs = cells[[SOURCE, "cell_id", "_key"]].astype(str)
    pairs = pairs[~pairs.duplicated([SOURCE, "cell_id"], keep=False)]
    return dict(zip(zip(pairs[SOURCE], pairs["cell_id"], strict=True), pairs["_key"], strict=True))


def skills_html(frame: pd.DataFrame, labels: dict[str, str]) -> str:
    """The per-skill table; each cell it appears in is a link to that cell's drill-down."""
    if frame.empty:
        return '<p class="sf-empty">No skill was received in any loaded cell.</p>'
    shown = frame.head(MAX_SKILLS)
    body = []
    for r in shown.itertuples(index=False):
        cells = "".join(
            f'<button class="sf-task" data-sf-cell="{escape(k)}">{escape(_capped(labels.get(k, k), 80))}</button> '
            for k in r.cells[:CELLS_SHOWN]
        )
        if len(r.cells) > CELLS_SHOWN:
            cells += f'<span class="sf-sub">+{len(r.cells) - CELLS_SHOWN} more</span>'
        rae = "—" if math.isnan(r.alone_rae) else pp(r.alone_rae)
        sign = "sf-neg" if r.alone_rae < 0 else ""
        trigger = (
            f"{r.own_hits}/{r.own_evals} ({100 * r.own_hits / r.own_evals:.0f}%)"
            if r.own_evals
            else '<span class="sf-sub">no own evals</span>'
        )
        never = " sf-flag" if r.own_evals and not r.own_hits else ""
        body.append(
            f'<tr data-skill="{escape(r.skill)}"><td><b>{escape(_capped(r.skill))}</b>'
            f'<div class="sf-sub">{escape(_capped(r.skill_pool))} · {escape(_capped(r.source))}</div></td>'
            f'<td class="sf-num">{r.received}</td><td class="sf-num">{len(r.cells)}</td>'
            f'<td class="sf-num">{r.alone_n}</td><td class="sf-num">{r.alone_b} / {r.alone_c}</td>'
            f'<td class="sf-num"><b class="{sign}">{rae}</b></td>'
            f'<td class="sf-num{never}">{trigger}</td><td>{cells}</td></tr>'
        )
    more = (
        f'<p class="sf-sub">{len(frame) - MAX_SKILLS:,} more skills not shown.</p>'
        if len(frame) > MAX_SKILLS
        else ""
    )
    return (
        '<p class="sf-sub">Per skill, over every loaded cell of its source. <b>Alone</b>: the '
        "tasks where it was the only skill the SE arm received, so each flip is credited to one "
        "skill. <b>Own evals</b>: its <code>skill-evals</code> tasks on which it came back.</p>"
        '<div class="sf-table-wrap"><table class="sf-table sf-skills"><thead><tr>'
        '<th title="Skill, its pool and the source that published the rows">skill</th>'
        '<th title="Tasks on which the SE arm received this skill">received on</th>'
        '<th title="Cells with at least one such task">cells</th>'
        '<th title="Tasks where it was the only skill received">alone: n</th>'
        '<th title="Helpful (b) / harmful (c) flips on those tasks">alone: b / c</th>'
        '<th title="100·(b−c)/n on those tasks, percentage points">alone: RAE pp</th>'
        '<th title="Its own skill-evals tasks on which it came back">own evals: triggered</th>'
        f"<th>cells it appears in</th></tr></thead><tbody>{''.join(body)}</tbody></table></div>{more}"
    )
