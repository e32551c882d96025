"""Left items of the board and the Hub push: a cap on the board's sources, hostile judge
records in the drill-down's cost line, and the Hub read path's size check before a download.

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


#: judge_verdicts values of the wrong types that read without an error: the board showed
#: figures from them (a string's characters counted as repeats, ties of -7), where `report`
#: refuses them (`metrics._own.judge_record_problem`).
WRONG_TYPES = {
    "unanimous a string": json.dumps({"majority": [True], "unanimous": "abcdef", "n_valid": 2}),
    "ties -7": json.dumps({"majority": [True], "unanimous": [True], "n_valid": 2, "ties": -7}),
    "ties true": json.dumps({"majority": [True], "unanimous": [True], "n_valid": 2, "ties": True}),
    "repeats a string": json.dumps(
        {"majority": [True], "unanimous": [True], "n_valid": 2, "settings": {"repeats": "9"}}
    ),
}


@pytest.mark.parametrize("wrong", list(WRONG_TYPES), ids=list(WRONG_TYPES))
def test_a_judge_record_of_the_wrong_types_gives_no_figures_but_a_note(
    tmp_path: Path, wrong: str
) -> None:
    from hf_skillfollow.space_app._cost import cell_noise
    from hf_skillfollow.space_app._ui import _show_cell

    source = _judged_run(tmp_path / "bad", "r5", "cellM", WRONG_TYPES[wrong])
    board = load_board([source], resamples=20, discover=False, use_cache=False)
    header = _show_cell(board, cell_key("cellM", source))[0]
    assert "tokens SE 10 · SD 10 · Δ +0" in header
    assert "judge figures left out: a judge_verdicts value is not a judge record" in header
    assert "run &#x27;r5&#x27;, task &#x27;t1&#x27;" in header  # names the row
    assert "Judge noise" not in header
    (cell,) = [c for _, c in board.pooled.iterrows()]
    assert cell_noise(board.traces.table, board.task_rows(cell)) is None


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


# --- the Hub read path: one listing of the repo, sized before any download ------------------


class CountingProxy:
    """A pass-through HTTP proxy in front of the olah mirror that records each request's
    method and path: the answers are olah's, unchanged (redirects included).

    With `refuse_file_heads`, it is a test double of a Hub that refuses (403) every file
    metadata request (HEAD) made before the repo's second listing, which the olah mirror
    cannot be made to do."""

    def __init__(self, upstream: str, *, refuse_file_heads: bool = False) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.requests: list[str] = []
        self.refuse_file_heads = refuse_file_heads
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                import http.client

                proxy.requests.append(f"{self.command} {self.path}")
                body = self.rfile.read(int(self.headers.get("content-length", 0) or 0))
                listings = sum("/tree/" in r for r in proxy.requests)
                if proxy.refuse_file_heads and self.command == "HEAD" and listings < 2:
                    self.send_response(403)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                up = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                up.request(self.command, self.path, body=body or None, headers=headers)
                resp = up.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                length = resp.getheader("content-length") if self.command == "HEAD" else None
                for key, value in resp.getheaders():
                    if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(key, value)
                self.send_header("content-length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                up.close()

            do_GET = do_HEAD = do_POST = _forward

        return Handler

    def __enter__(self) -> CountingProxy:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


_LOAD = """
import os, sys
from pathlib import Path
if len(sys.argv) > 3 and sys.argv[3] == "offline":
    os.environ["HF_HUB_OFFLINE"] = "1"
if len(sys.argv) > 3 and sys.argv[3].isdigit():  # a file budget of that many bytes
    from hf_skillfollow.hub import _budget
    _budget.BUDGETS["transitions"] = _budget.Budget(
        file_bytes=int(sys.argv[3]), decoded_bytes=1 << 30, string_chars=4096, rows=10**7
    )
from hf_skillfollow.hub import load_transitions
try:
    print("rows", load_transitions(sys.argv[1]).num_rows)
except Exception as exc:
    print("error", type(exc).__name__, exc)
print("parquet downloaded", sum(1 for p in Path(sys.argv[2]).rglob("*.parquet")))
"""


@pytest.fixture(scope="module")
def served_repo(tmp_path_factory: pytest.TempPathFactory):
    """`push --dry-run` of two runs into a git repo that olah serves as `org/listed`."""
    from click.testing import CliRunner

    from hf_skillfollow.cli import cli
    from tests._fixtures_hub import two_cell_runs
    from tests._olah import git_commit, mirror

    pytest.importorskip("olah")
    root = tmp_path_factory.mktemp("olah-listing")
    runs = two_cell_runs(root / "runs")
    repo = root / "mirrors" / "datasets" / "org" / "listed"
    res = CliRunner().invoke(
        cli, ["push", *map(str, runs), "--repo", "org/listed", "--dry-run", str(repo)]
    )
    assert res.exit_code == 0, res.output
    git_commit(repo)
    with mirror(root, "org/listed") as endpoint:
        yield endpoint, repo


def test_a_hub_source_is_listed_once_and_sized_before_its_download(
    served_repo, tmp_path: Path
) -> None:
    endpoint, _ = served_repo
    with CountingProxy(endpoint) as proxy:
        done = client(proxy.endpoint, _LOAD, "org/listed", str(tmp_path), tmp=tmp_path)
    assert "rows 40" in done.stdout, done.stdout + done.stderr[-3000:]
    listings = [r for r in proxy.requests if "/tree/" in r]
    assert len(listings) == 1, proxy.requests
    assert len([r for r in proxy.requests if "/revision/" in r]) == 1, proxy.requests
    # every file request comes after the listing, at the commit it was listed at
    commit = listings[0].split("/tree/")[1].split("?")[0]
    files = [r for r in proxy.requests if "/resolve/" in r]
    assert files and all(f"/resolve/{commit}/" in r for r in files), proxy.requests
    assert proxy.requests.index(listings[0]) < proxy.requests.index(files[0])


def test_a_refused_metadata_request_does_not_skip_the_size_check(
    served_repo, tmp_path: Path
) -> None:
    """The dry run's per-file requests were answered 403: its `except OSError` read that as
    'offline', skipped the size check and downloaded the repo anyway. The listing's sizes are
    checked first now, so a repo over the budget is refused with nothing downloaded."""
    endpoint, repo = served_repo
    size = sum(p.stat().st_size for p in (repo / "data" / "transitions").glob("*.parquet"))
    with CountingProxy(endpoint, refuse_file_heads=True) as proxy:
        done = client(
            proxy.endpoint, _LOAD, "org/listed", str(tmp_path), str(size - 1), tmp=tmp_path
        )
    assert "error BudgetError org/listed" in done.stdout, done.stdout + done.stderr[-3000:]
    assert "parquet downloaded 0" in done.stdout, done.stdout


def test_a_hub_source_loaded_once_is_read_from_the_cache_offline(
    served_repo, tmp_path: Path
) -> None:
    """The files are fetched one by one at the listed commit; the cache still names that
    commit as `main`, so an offline load reads them (and with nothing cached, says why)."""
    endpoint, _ = served_repo
    online = client(endpoint, _LOAD, "org/listed", str(tmp_path), tmp=tmp_path)
    assert "rows 40" in online.stdout, online.stdout + online.stderr[-3000:]
    offline = client(endpoint, _LOAD, "org/listed", str(tmp_path), "offline", tmp=tmp_path)
    assert "rows 40" in offline.stdout, offline.stdout + offline.stderr[-3000:]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    none = client(endpoint, _LOAD, "org/listed", str(fresh), "offline", tmp=fresh)
    assert "error HubError org/listed:" in none.stdout, none.stdout + none.stderr[-3000:]
    assert "parquet downloaded 0" in none.stdout
