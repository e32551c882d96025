"""Session 22 review of the runner and board commits: what f851ea4's "a pair that raises is
one failed row" must not swallow, and what such a row must still record.

The model is `ScriptedModelServerDouble` (tests/_model_double.py): a real server on 127.0.0.1
standing in for a model provider. `hf-skillfollow run` is invoked in-process (click's runner);
the runner, the openai backend, scoring and the run store are the real code. Where a grader
bug is needed (no real input makes the grader raise), `EveryTaskGraderBugDouble` plants it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from tests._model_double import ScriptedModelServerDouble


def new_run(url: str, math_file: Path, out: Path, limit: int) -> tuple[int, str]:
    args = ["run", "--backend", "openai", "--model", "double-model", "--base-url", url,
            "--benchmark", "math500", "--tasks-file", str(math_file), "--limit", str(limit),
            "--concurrency", "1", "-o", str(out), "--no-report"]  # fmt: skip
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.output


def records(out: Path) -> list[dict]:
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    path = run_dir / "records.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip()]


class EveryTaskGraderBugDouble:
    """A test double of a grader with a bug met on every task (it stands in for
    `scoring.score_answer_async`), or on the first task alone (`only_first`), scoring the
    others with the real grader."""

    def __init__(self, real: object, exc: Exception, only_first: bool = False) -> None:
        self.real, self.exc, self.only_first = real, exc, only_first
        self.bad: str | None = None

    async def __call__(self, task: object, answer: str) -> object:
        self.bad = self.bad or task.task_id
        if not self.only_first or task.task_id == self.bad:
            raise self.exc
        return await self.real(task, answer)


def plant(monkeypatch: pytest.MonkeyPatch, exc: Exception, only_first: bool = False) -> None:
    import hf_skillfollow.scoring as scoring

    double = EveryTaskGraderBugDouble(scoring.score_answer_async, exc, only_first)
    monkeypatch.setattr(scoring, "score_answer_async", double)


def test_a_module_that_cannot_be_imported_stops_the_run_not_a_row_per_task(
    tmp_path: Path,
    math_file: Path,
    math_tasks: list,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Was (f851ea4): a scorer module that cannot be imported (a broken installation; here
    the real import of the math worker made to fail) was recorded as 'pair failed:
    ModuleNotFoundError' for every task and the run ended with exit 0. An installation
    problem is no task's: the run stops at once with one line, no pair recorded, and the pairs
    waiting behind it are cancelled (they used to go on, asking a closed client, each logged
    as an 'unhandled exception during asyncio.run() shutdown' traceback)."""
    import hf_skillfollow.scoring as scoring

    monkeypatch.delattr(scoring, "_math_worker", raising=False)
    monkeypatch.setitem(sys.modules, "hf_skillfollow.scoring._math_worker", None)
    out = tmp_path / "out"
    with ScriptedModelServerDouble(math_tasks) as double:
        code, output = new_run(double.url, math_file, out, limit=4)
    assert code == 1, output
    assert "a module this run needs cannot be imported (ModuleNotFoundError" in output, output
    assert "continue with --resume" in output and "Traceback" not in output
    assert records(out) == []
    assert not [r for r in caplog.records if "shutdown" in r.getMessage()], caplog.text


def test_a_grader_failure_met_on_every_task_stops_the_run_after_three_pairs(
    tmp_path: Path, math_file: Path, math_tasks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was (f851ea4): a bug met on every task was recorded for all of them, exit 0, every
    task's model requests spent on rows that measure nothing. Now the first three failed
    pairs, none succeeded, stop the run with one line saying how to run them again."""
    plant(monkeypatch, KeyError("reference (double)"))
    out = tmp_path / "out"
    with ScriptedModelServerDouble(math_tasks) as double:
        code, output = new_run(double.url, math_file, out, limit=8)
    assert code == 1, output
    assert "the first 3 pairs all failed inside the toolkit" in output, output
    assert "KeyError" in output and "--retry-errors all" in output
    done = records(out)
    assert len(done) == 3
    assert all(r["transition"]["se_error"].startswith("pair failed: KeyError") for r in done)


def test_one_failed_pair_among_good_ones_does_not_stop_the_run(
    tmp_path: Path, math_file: Path, math_tasks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop counts failures before any success: one hostile task is still one row."""
    plant(monkeypatch, KeyError("reference (double)"), only_first=True)
    out = tmp_path / "out"
    with ScriptedModelServerDouble(math_tasks) as double:
        code, output = new_run(double.url, math_file, out, limit=5)
    assert code == 0, output
    done = records(out)
    assert len(done) == 5
    assert sum(bool(r["transition"]["se_error"]) for r in done) == 1


def test_a_pair_whose_grading_failed_keeps_the_tokens_its_arms_spent(
    tmp_path: Path, math_file: Path, math_tasks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was (f851ea4): a pair whose grader raised after both arms had asked the model was
    recorded with 0 tokens and 0 s in both arms, so the cost table read it as free. Now the
    arms' usage is kept (the double answers 11 prompt and 7 completion tokens a request)."""
    plant(monkeypatch, ValueError("grader bug (double)"), only_first=True)
    out = tmp_path / "out"
    with ScriptedModelServerDouble(math_tasks) as double:
        code, output = new_run(double.url, math_file, out, limit=2)
    assert code == 0, output
    (failed,) = [r for r in records(out) if r["transition"]["se_error"]]
    assert failed["transition"]["se_error"].startswith("pair failed: ValueError")
    for trace in failed["traces"]:
        assert trace["prompt_tokens"] >= 11 and trace["completion_tokens"] >= 7, trace["arm"]
        assert trace["latency_s"] > 0


def test_a_redirecting_judge_endpoint_stops_the_run_naming_it(tmp_path: Path) -> None:
    """Was (c2830a4 covered the model's endpoint only): a --judge-base-url whose model list
    is 404 and whose chat requests are answered 307 ran to the end, exit 0: every judged
    answer recorded as a grading failure, both arms incorrect, no arm error, so the cell
    counted the pair as measured (12 judge requests for one judged pair). Now the first
    redirected judge request stops the run with one line naming the judge's endpoint, the
    target and --judge-base-url; that pair is not recorded."""
    from tests._judge_double import AgentAndJudgeDouble
    from tests.test_own_run import OWN, answerer
    from tests.test_runner_left_items import ELSEWHERE, RedirectingServerDouble

    out = tmp_path / "out"
    with (
        AgentAndJudgeDouble(answerer) as model,
        RedirectingServerDouble(models_redirect=False) as judge,
    ):
        args = ["run", "--backend", "openai", "--model", "double-model", "--base-url",
                model.url, "--benchmark", "custom", "--tasks-file", str(OWN / "tasks.jsonl"),
                "--skills", str(OWN / "skills"), "--judge-base-url", judge.url,
                "--judge-model", "judge-model", "--concurrency", "1", "-o", str(out),
                "--no-report"]  # fmt: skip
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert f"the judge's endpoint {judge.url}/chat/completions answered a redirect" in line
    assert f"redirect to '{ELSEWHERE}/chat/completions'" in line and "--judge-base-url" in line
    assert "continue with --resume" in line
    done = records(out)
    assert "thanks" not in {r["task_id"] for r in done}  # the judged task's pair


# --- the Hub read path (eaa1eac): the repo's listing is bounded too --------------------------

_LOAD_LISTED = """
import sys
from pathlib import Path
from hf_skillfollow.hub import _load, load_transitions
_load.MAX_LISTED_ENTRIES = int(sys.argv[3])  # the cap, lowered to what the test repo passes
try:
    print("rows", load_transitions(sys.argv[1]).num_rows)
except Exception as exc:
    print("error", type(exc).__name__, exc)
print("parquet downloaded", sum(1 for p in Path(sys.argv[2]).rglob("*.parquet")))
"""


@pytest.fixture(scope="module")
def crowded_repo(tmp_path_factory: pytest.TempPathFactory):
    """`push --dry-run` of two runs, plus 300 other files, in a git repo olah serves."""
    from tests._fixtures_hub import two_cell_runs
    from tests._olah import git_commit, mirror

    pytest.importorskip("olah")
    root = tmp_path_factory.mktemp("olah-crowded")
    runs = two_cell_runs(root / "runs")
    repo = root / "mirrors" / "datasets" / "org" / "crowded"
    res = CliRunner().invoke(
        cli, ["push", *map(str, runs), "--repo", "org/crowded", "--dry-run", str(repo)]
    )
    assert res.exit_code == 0, res.output
    (repo / "junk").mkdir()
    for i in range(300):
        (repo / "junk" / f"{i}.txt").write_text(str(i))
    git_commit(repo)
    with mirror(root, "org/crowded") as endpoint:
        yield endpoint


def test_a_hub_repo_listing_more_entries_than_the_cap_is_refused_before_any_download(
    crowded_repo: str, tmp_path: Path
) -> None:
    """Was: the listing of a Hub source was read to its end whatever its length (every page
    of the tree: a repo of millions of files, which anyone can tag, made the board's start
    unbounded). Now past `MAX_LISTED_ENTRIES` entries the source is one BudgetError, nothing
    downloaded; under the cap it loads as before."""
    from tests._olah import client

    refused = client(crowded_repo, _LOAD_LISTED, "org/crowded", str(tmp_path / "a"), "200",
                     tmp=tmp_path / "a")  # fmt: skip
    assert "error BudgetError org/crowded: its listing holds more than 200 files" in (
        refused.stdout
    ), refused.stdout + refused.stderr[-3000:]
    assert "parquet downloaded 0" in refused.stdout
    loaded = client(crowded_repo, _LOAD_LISTED, "org/crowded", str(tmp_path / "b"), "1000",
                    tmp=tmp_path / "b")  # fmt: skip
    assert "rows 40" in loaded.stdout, loaded.stdout + loaded.stderr[-3000:]
