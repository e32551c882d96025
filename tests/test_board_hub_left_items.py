"""Left items of the board and the Hub push: a cap on the board's sources, hostile judge
records in the drill-down's cost line, ...

Hub discovery lists the datasets tagged `skillfollow` through huggingface.co's
``/api/datasets`` listing. That listing cannot be reached here and the olah mirror
(tests/_olah.py) does not serve it, so `HubListingDouble` stands in for it: a real HTTP server
on 127.0.0.1 that pages its answer as the Hub does (a ``Link: rel="next"`` header), read by the
unmodified `huggingface_hub` client in a fresh interpreter (``HF_ENDPOINT`` is read at import).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hf_skillfollow.schema import traces_from_rows, transitions_from_rows
from hf_skillfollow.space_app._board import cell_key, load_board
from hf_skillfollow.space_app._sources import (
    MAX_DISCOVERED_SOURCES,
    MAX_NAMED_SOURCES,
    resolve_sources,
)
from tests._cost_fixtures import TASKS, record, trace
from tests._olah import client
from tests._rows import transition_row

#: How many entries one page of the double's listing holds (the Hub's page size for datasets).
PAGE = 1_000


class HubListingDouble:
    """Stands in for huggingface.co's dataset listing: ``count`` datasets tagged
    `skillfollow`, ``owner/ds-<i>`` downloaded ``i`` times, listed oldest first unless
    ``sort=downloads`` is asked (then most downloaded first), ``limit`` honoured, pages of
    `PAGE` linked with ``rel="next"``. ``requests`` records each path asked."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.requests: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def listing(self, query: dict[str, list[str]]) -> list[dict]:
        if query.get("filter") != ["skillfollow"]:
            return []
        rows = [{"id": f"owner/ds-{i}", "downloads": i} for i in range(self.count)]
        if query.get("sort") == ["downloads"]:
            rows.sort(key=lambda r: -r["downloads"])
        return rows[: int(query["limit"][0])] if "limit" in query else rows

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                double.requests.append(self.path)
                url = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(url.query)
                if url.path != "/api/datasets":
                    self.send_error(404)
                    return
                rows = double.listing(query)
                start = int(query.get("cursor", ["0"])[0])
                page = rows[start : start + PAGE]
                body = json.dumps(page).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                if start + PAGE < len(rows):
                    rest = {k: v for k, v in query.items() if k != "cursor"}
                    rest["cursor"] = [str(start + PAGE)]
                    link = (
                        f"{double.endpoint}/api/datasets?{urllib.parse.urlencode(rest, doseq=True)}"
                    )
                    self.send_header("link", f'<{link}>; rel="next"')
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def __enter__(self) -> HubListingDouble:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# huggingface_hub is imported before the call: discovery waits 3 s for its listing thread,
# and a cold import on a loaded machine is not what is measured here.
_DISCOVER = """
import json, sys
import huggingface_hub
from hf_skillfollow.space_app._sources import resolve_sources
names, warnings = resolve_sources(sys.argv[1:], env={"SKILLFOLLOW_DISCOVER": "1"})
print(json.dumps({"names": names, "warnings": warnings}))
"""


def _discover(endpoint: str, tmp: Path, *named: str) -> tuple[list[str], list[str]]:
    done = client(endpoint, _DISCOVER, *named, tmp=tmp)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return out["names"], out["warnings"]


def test_hub_discovery_loads_at_most_the_cap_most_downloaded_first(tmp_path: Path) -> None:
    """10,000 tagged repos: one listing page is read, the 50 most downloaded are the board's
    sources, and one warning says how many more were left out (at least: the listing stops)."""
    with HubListingDouble(10_000) as hub:
        names, warnings = _discover(hub.endpoint, tmp_path)
    assert names == [f"owner/ds-{i}" for i in range(9_999, 9_999 - MAX_DISCOVERED_SOURCES, -1)]
    assert len(hub.requests) == 1, hub.requests
    assert len(warnings) == 1
    assert "MAX_DISCOVERED_SOURCES" in warnings[0] and "at least 950 left out" in warnings[0]


@pytest.mark.parametrize(
    "count,named,expected_left",
    [
        (MAX_DISCOVERED_SOURCES, (), None),
        (MAX_DISCOVERED_SOURCES + 1, (), "1 left out"),
        # a tagged repo also named counts once, as a named source, not against the cap
        (MAX_DISCOVERED_SOURCES + 1, ("owner/ds-0",), None),
    ],
)
def test_hub_discovery_cap_boundary(
    tmp_path: Path, count: int, named: tuple[str, ...], expected_left: str | None
) -> None:
    with HubListingDouble(count) as hub:
        names, warnings = _discover(hub.endpoint, tmp_path, *named)
    assert len(names) == len(named) + min(count - len(named), MAX_DISCOVERED_SOURCES)
    assert len(set(names)) == len(names)
    if expected_left is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and expected_left in warnings[0]
        assert "at least" not in warnings[0]
        assert "owner/ds-0" not in names  # the least downloaded is the one left out


@pytest.mark.parametrize("how", ["arguments", "environment"])
def test_named_sources_are_capped_with_one_warning(tmp_path: Path, how: str) -> None:
    many = [str(tmp_path / f"run-{i}") for i in range(MAX_NAMED_SOURCES + 5)]
    if how == "arguments":
        names, warnings = resolve_sources(many, env={}, discover=False)
        field = "SOURCE arguments"
    else:
        names, warnings = resolve_sources(
            env={"SKILLFOLLOW_SOURCES": ",".join(many)}, discover=False
        )
        field = "SKILLFOLLOW_SOURCES"
    assert names == many[:MAX_NAMED_SOURCES]
    assert len(warnings) == 1
    assert field in warnings[0] and "MAX_NAMED_SOURCES" in warnings[0]
    assert "other 5 are left out" in warnings[0]
    # at the cap: every source, no warning
    names, warnings = resolve_sources(many[:MAX_NAMED_SOURCES], env={}, discover=False)
    assert names == many[:MAX_NAMED_SOURCES] and warnings == []


# --- hostile judge records in the drill-down's cost and judge-noise figures -----------------

JUDGE = "judge-double@h"
GOOD = record([True, True], [True, False])
#: judge_verdicts values a submitter can publish that made `metrics._own` raise something
#: other than what `_cost` caught: json's RecursionError and int(inf)'s OverflowError.
HOSTILE = {
    "nested 100,000 deep": "[" * 100_000 + "]" * 100_000,
    "object nested 100,000 deep": '{"majority": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "ties 1e400": '{"majority": [true], "unanimous": [true, false], "n_valid": 2, "ties": 1e400}',
    "repeats 1e400": '{"majority": [true], "unanimous": [true], "n_valid": 2, '
    '"settings": {"repeats": 1e400}}',
    "not JSON": "{not json",
}


def _judged_run(root: Path, run: str, cell: str, first_record: str) -> str:
    """A judged run (`judged_by` set, so the board measures its judge noise) whose t1 SE trace
    carries `first_record` and every other answer a good record."""
    run_dir = root / run
    run_dir.mkdir(parents=True)
    rows = [transition_row(run_id=run, cell_id=cell, model=f"m-{cell}", task_id=t, se_correct=se,
                           sd_correct=sd, invoked=True, returned=True, n_calls=1,
                           skills_returned=["s"], judged_by=JUDGE) for t, se, sd in TASKS]  # fmt: skip
    traces = [
        trace(run, cell, t, arm, 10, 0, 1.0, first_record if (t, arm) == ("t1", "se") else GOOD)
        for t, _, _ in TASKS
        for arm in ("se", "sd")
    ]
    pq.write_table(transitions_from_rows(rows), run_dir / "transitions.parquet")
    pq.write_table(traces_from_rows(traces), run_dir / "traces.parquet")
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": run}))
    return str(root)


@pytest.mark.parametrize("hostile", list(HOSTILE), ids=list(HOSTILE))
def test_a_hostile_judge_record_is_a_note_in_the_drill_down_not_a_traceback(
    tmp_path: Path, hostile: str
) -> None:
    from hf_skillfollow.space_app._ui import _show_cell

    source = _judged_run(tmp_path / "bad", "r5", "cellM", HOSTILE[hostile])
    board = load_board([source], resamples=20, discover=False, use_cache=False)
    header = _show_cell(board, cell_key("cellM", source))[0]
    assert "tokens SE 10 · SD 10 · Δ +0" in header  # the cost figures stay
    assert "judge figures left out: a judge_verdicts value is not a judge record" in header
    assert "Judge noise" not in header


def test_one_cells_hostile_judge_record_costs_only_that_cells_judge_noise(tmp_path: Path) -> None:
    """The board measures every judged cell's noise in one background pass: a hostile record
    in one source used to end the pass (RecursionError), so no cell got its noise badge."""
    honest = _judged_run(tmp_path / "honest", "r1", "cellH", GOOD)
    hostile = _judged_run(tmp_path / "hostile", "r2", "cellX", HOSTILE["nested 100,000 deep"])
    board = load_board([hostile, honest], resamples=20, discover=False, use_cache=False)
    board.measure_judges_soon()
    assert board.judges_done.wait(60)
    assert not [w for w in board.warnings if "Judge noise not measured" in w], board.warnings
    assert set(board.judge_noise) == {cell_key("cellH", honest)}
    assert board.judge_noise[cell_key("cellH", honest)]["answers"] == 6
