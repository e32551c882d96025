"""Per-cell figures of a maintainer's own tasks and the cost of both arms (pure computation).

Inputs are plain rows: transitions rows (one per task) and traces rows (one per arm), as
published. Definitions are in docs/tasks.md ("Judge noise", "Report"):

- cost: mean tokens (prompt + completion) and seconds per task in SE and SD, and SE − SD;
- judge noise: the share of judged (answer, expectation) items with at least two valid
  repeats whose repeats disagree (self-disagreement), majority ties, grading failures, and
  the b and c flips a single judge disagreement could explain (a flip with a *fragile*
  answer: one disagreeing repeat away from the other verdict, or decided by fewer valid
  repeats than asked), out of the flips between two judged answers (an errored arm's empty
  answer is not judged, and `tests` or `answer` tasks have no judge);
- the answers that address a grader, per arm;
- per skill (skill-evals): n, coverage (the skill itself retrieved on its own evals), b, c,
  RAE over those evals, and the expectation pass rate per arm.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

Row = Mapping[str, Any]


def _by_cell(rows: Iterable[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        out[str(r["cell_id"])].append(r)
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def cost(traces: Iterable[Row]) -> dict[str, dict[str, float]]:
    """Per cell: mean tokens and seconds per task in each arm and their SE − SD difference."""
    out = {}
    for cell, rows in _by_cell(traces).items():
        arms = {arm: [r for r in rows if r["arm"] == arm] for arm in ("se", "sd")}
        tokens = {
            a: _mean([float(r["prompt_tokens"] + r["completion_tokens"]) for r in rs])
            for a, rs in arms.items()
        }
        seconds = {a: _mean([float(r["latency_s"]) for r in rs]) for a, rs in arms.items()}
        out[cell] = {
            "se_tokens": tokens["se"],
            "sd_tokens": tokens["sd"],
            "d_tokens": tokens["se"] - tokens["sd"],
            "se_seconds": seconds["se"],
            "sd_seconds": seconds["sd"],
            "d_seconds": seconds["se"] - seconds["sd"],
            "n_se": len(arms["se"]),
            "n_sd": len(arms["sd"]),
        }
    return out


_COUNTS = ("n_valid", "ties")
_FLAGS = ("majority", "unanimous")


def judge_record_problem(text: Any) -> str | None:
    """What is wrong with a traces row's judge record for the figures read from it (`_record`
    and what uses it), or None (no record, an empty answer's `not_judged`, or a good one).
    The report (`report_own.read_trace_rows`) and the board's drill-down (`space_app._cost`)
    ask it before reading a submitter's records."""
    from hf_skillfollow._text import loads_untrusted

    if not text:
        return None
    try:
        record = loads_untrusted(text)
    except ValueError as exc:
        return f"not JSON ({str(exc)[:80]})"
    if not isinstance(record, dict):
        return "not a JSON object"
    if record.get("not_judged"):
        return None
    settings = record.get("settings")
    repeats = settings.get("repeats", 0) if isinstance(settings, dict) else None
    if settings is not None and not _count(repeats):
        return "'settings' is not an object with an integer 'repeats'"
    for key in _COUNTS:
        if key in record and not _count(record[key]):
            return f"{key!r} is not a count"
    for key in _FLAGS:
        value = record.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, bool) for v in value):
            return f"{key!r} is not a list of true/false"
    return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _record(row: Row) -> dict[str, Any] | None:
    """The judge's record of a judged answer; None where the judge was not asked (no record,
    or an empty answer of an errored arm, recorded as `not_judged`)."""
    text = row.get("judge_verdicts")
    record = None if not text else json.loads(text)
    return None if record is None or record.get("not_judged") else record


def _fragile(record: dict[str, Any]) -> bool:
    """One judge disagreement could turn the verdict: the recorded fragility, or fewer valid
    repeats than asked (records written before that rule count it here too)."""
    asked = (record.get("settings") or {}).get("repeats", 0)
    return bool(record.get("fragile")) or int(record.get("n_valid", 0)) < int(asked)


def _flip(t: Row) -> str | None:
    if t["se_correct"] and not t["sd_correct"]:
        return "b"
    if t["sd_correct"] and not t["se_correct"]:
        return "c"
    return None


def judge_noise(transitions: Iterable[Row], traces: Iterable[Row]) -> dict[str, dict[str, Any]]:
    """Per cell with judged answers: the judge's noise and the flips it could explain (the
    cell's runs' `cost_sums`, so the report and the card count alike)."""
    transitions = list(transitions)
    # one judged trace per answer, the last (as a resumed run's file is read)
    judged = {
        (str(r["run_id"]), str(r["task_id"]), str(r["arm"])): r
        for r in traces
        if _record(r) is not None
    }
    out: dict[str, dict[str, Any]] = {}
    for (_, cell), sums in cost_sums(transitions, judged.values()).items():
        s = out.setdefault(cell, dict.fromkeys(_NOISE_KEYS, 0))
        for column, name in _NOISE.items():
            s[name] += sums[column]
    for t in transitions:
        flip = _flip(t)
        # only a flip between two judged answers is the judge's to explain: not a `tests` or
        # `answer` task's, nor one with an errored (unjudged) arm
        key = (str(t["run_id"]), str(t["task_id"]))
        if flip is not None and all((*key, arm) in judged for arm in ("se", "sd")):
            out[str(t["cell_id"])][flip] += 1
    for cell in [c for c, s in out.items() if not s["answers"]]:
        del out[cell]
    for s in out.values():
        s["self_disagreement"] = 100.0 * s["disagreeing"] / s["items"] if s["items"] else math.nan
    return out


#: the judge-noise names of the report for their COST_COLUMNS
_NOISE = {
    "judged_answers": "answers", "grading_failures": "grading_failures", "judge_ties": "ties",
    "judge_items": "items", "judge_disagreeing": "disagreeing",
    "b_explainable": "b_explainable", "c_explainable": "c_explainable",
}  # fmt: skip
_NOISE_KEYS = ("answers", "grading_failures", "ties", "items", "disagreeing", "b", "c",
               "b_explainable", "c_explainable")  # fmt: skip


def addressing(traces: Iterable[Row]) -> dict[str, dict[str, int]]:
    """Per cell with own-task traces: answers that address a grader, per arm."""
    out: dict[str, dict[str, int]] = {}
    for cell, rows in _by_cell(traces).items():
        flagged = [r for r in rows if r.get("addresses_grader") is not None]
        if flagged:
            out[cell] = {
                arm: sum(bool(r["addresses_grader"]) for r in flagged if r["arm"] == arm)
                for arm in ("se", "sd")
            }
    return out


def rae_by_cell(transitions: Iterable[Row]) -> dict[str, float]:
    """RAE per cell (docs/design.md, "Metrics"), to print beside these figures; NaN when no
    task of the cell received a skill (S_call empty)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for t in transitions:
        c = counts[str(t["cell_id"])]
        if t["returned"]:
            flip = _flip(t)
            c[0] += 1
            c[1] += flip == "b"
            c[2] += flip == "c"
    return {cell: 100.0 * (b - c) / n if n else math.nan for cell, (n, b, c) in counts.items()}


def per_skill(transitions: Iterable[Row], traces: Iterable[Row]) -> list[dict[str, Any]]:
    """skill-evals: one row per (cell, skill) over that skill's own evals (task `<skill>/<id>`)."""
    pass_rates: dict[tuple[str, str, str], tuple[int, int]] = {}
    for r in traces:
        rec = _record(r)
        if rec is not None and not rec.get("grading_failure"):
            pass_rates[(str(r["run_id"]), str(r["task_id"]), str(r["arm"]))] = (
                sum(rec["majority"]),
                len(rec["majority"]),
            )
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for t in transitions:
        # a harness run of the evals (`run --harness harbor --benchmark skill-evals`) too
        if t["benchmark"] in ("skill-evals", "harbor:skill-evals"):
            groups[(str(t["cell_id"]), str(t["task_id"]).split("/", 1)[0])].append(t)
    out = []
    for (cell, skill), rows in sorted(groups.items()):
        own = [t for t in rows if skill in (t["skills_returned"] or [])]
        b = sum(_flip(t) == "b" for t in own)
        c = sum(_flip(t) == "c" for t in own)
        rates = {}
        for arm in ("se", "sd"):
            met = [pass_rates.get((str(t["run_id"]), str(t["task_id"]), arm)) for t in rows]
            met = [m for m in met if m is not None]
            total = sum(n for _, n in met)
            rates[arm] = 100.0 * sum(k for k, _ in met) / total if total else math.nan
        out.append(
            {
                "cell_id": cell,
                "skill": skill,
                "n": len(rows),
                "n_retrieved": len(own),
                "coverage": 100.0 * len(own) / len(rows),
                "b": b,
                "c": c,
                "rae": 100.0 * (b - c) / len(own) if own else math.nan,
                "se_expectations": rates["se"],
                "sd_expectations": rates["sd"],
            }
        )
    return out


#: Per (run, cell) sums over its traces that the dataset card adds across runs: trace counts,
#: tokens and milliseconds per arm, the judge's noise counts and the answers addressing a
#: grader. All integers, so a sum is exact in any order (the card a push builds from the new
#: runs alone equals the one built from every run).
COST_COLUMNS: tuple[str, ...] = (
    "n_se", "n_sd", "se_tokens", "sd_tokens", "se_ms", "sd_ms",
    "judged_answers", "judge_items", "judge_disagreeing", "judge_ties", "grading_failures",
    "b_explainable", "c_explainable", "se_addressing", "sd_addressing",
)  # fmt: skip


def cost_sums(transitions: Iterable[Row], traces: Iterable[Row]) -> dict[tuple[str, str], dict]:
    """COST_COLUMNS per (run_id, cell_id) of `transitions` (every pair present, zeros when
    it has no traces); a trace counts through the transitions row of its (run_id, task_id)."""
    owner: dict[tuple[str, str], tuple[str, str]] = {}
    out: dict[tuple[str, str], dict[str, int]] = {}
    flips: dict[tuple[str, str], str | None] = {}
    for t in transitions:
        run, cell, task = str(t["run_id"]), str(t["cell_id"]), str(t["task_id"])
        owner[(run, task)] = (run, cell)
        flips[(run, task)] = _flip(t)
        out.setdefault((run, cell), dict.fromkeys(COST_COLUMNS, 0))
    fragile: set[tuple[str, str]] = set()
    judged: set[tuple[str, str, str]] = set()
    for r in traces:
        key = (str(r["run_id"]), str(r["task_id"]))
        arm = str(r["arm"])
        if key not in owner or arm not in ("se", "sd"):
            continue
        s = out[owner[key]]
        s[f"n_{arm}"] += 1
        s[f"{arm}_tokens"] += int(r["prompt_tokens"] or 0) + int(r["completion_tokens"] or 0)
        s[f"{arm}_ms"] += round(1000 * float(r["latency_s"] or 0.0))
        s[f"{arm}_addressing"] += bool(r.get("addresses_grader"))
        rec = _record(r)
        if rec is None:
            continue
        judged.add((*key, arm))
        s["judged_answers"] += 1
        s["grading_failures"] += bool(rec.get("grading_failure"))
        s["judge_ties"] += int(rec.get("ties", 0))
        if rec.get("n_valid", 0) >= 2:
            s["judge_items"] += len(rec["unanimous"])
            s["judge_disagreeing"] += sum(not u for u in rec["unanimous"])
        if _fragile(rec):
            fragile.add(key)
    for key in fragile:
        flip = flips[key]
        if flip is not None and all((*key, arm) in judged for arm in ("se", "sd")):
            out[owner[key]][f"{flip}_explainable"] += 1
    return out


def cost_of_sums(s: Mapping[str, int]) -> dict[str, float]:
    """The `cost` and judge-noise figures of summed COST_COLUMNS (NaN where undefined)."""

    def mean(total: str, n: str, scale: float = 1.0) -> float:
        return s[total] / scale / s[n] if s[n] else math.nan

    se_t, sd_t = mean("se_tokens", "n_se"), mean("sd_tokens", "n_sd")
    se_s, sd_s = mean("se_ms", "n_se", 1000.0), mean("sd_ms", "n_sd", 1000.0)
    items = s["judge_items"]
    return {
        "se_tokens": se_t, "sd_tokens": sd_t, "d_tokens": se_t - sd_t,
        "se_seconds": se_s, "sd_seconds": sd_s, "d_seconds": se_s - sd_s,
        "self_disagreement": 100.0 * s["judge_disagreeing"] / items if items else math.nan,
    }  # fmt: skip
