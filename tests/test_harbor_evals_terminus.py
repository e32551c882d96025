"""`run --harness harbor --benchmark skill-evals` end to end: real Harbor, real Terminus-2,
the sandbox environment, the toolkit's blinded judge.

Needs `.ci/setup-harbor` (Harbor in .venv-harbor); marker `harbor`. The agent's model and
the judge are the scripted doubles of tests/_harbor_evals_double.py over 127.0.0.1 (a model
provider boundary); every expected verdict below was written by hand from its SCRIPTS and
MESSAGES, not produced by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pq = pytest.importorskip("pyarrow.parquet")

from click.testing import CliRunner  # noqa: E402

from hf_skillfollow.cli import cli  # noqa: E402
from tests._harbor_evals_double import TerminusAndJudgeDouble  # noqa: E402

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(300)]

CSV = "city,population\nDelhi,33\nTokyo,37\nParis,11\n"
EVALS = {
    "skill_name": "city-facts",
    "evals": [
        {"id": "largest", "prompt": "Which city in the table has the most people? Write its "
         "name to a file.", "expected_output": "A file naming Tokyo.",
         "files": ["evals/files/cities.csv"], "expectations": ["mentions Tokyo"]},
        {"id": "distance", "prompt": "How far is it by road from Paris to Lyon?",
         "expectations": ["mentions kilometres"]},
    ],
}  # fmt: skip
#: by hand from the double: (se_correct, sd_correct, skills activated in SE)
EXPECTED = {
    "city-facts/largest": (True, False, ["city-facts"]),
    "city-facts/distance": (True, True, []),
}
#: model requests per trial: one per scripted turn, then task_complete and its confirmation
PER_TRIAL = {("largest", "se"): 4, ("largest", "sd"): 3, ("distance", "se"): 2,
             ("distance", "sd"): 2}  # fmt: skip


def _pool(root: Path) -> Path:
    folder = root / "pool" / "city-facts"
    (folder / "evals" / "files").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: city-facts\ndescription: Use for questions about the cities in a table.\n"
        "---\n# City facts\n\nThe largest city is the last row of `sort -t, -k2 -n FILE`.\n"
    )
    (folder / "evals" / "evals.json").write_text(json.dumps(EVALS))
    (folder / "evals" / "files" / "cities.csv").write_text(CSV)
    return root / "pool"


@pytest.fixture(scope="module")
def harbor() -> Path:
    from hf_skillfollow.harness._harbor import HarnessError, harbor_executable

    try:
        return harbor_executable()
    except HarnessError as exc:  # the harbor marker needs it: a skip would count as a pass
        pytest.fail(f"Harbor is not installed ({exc})")


def test_skill_evals_through_terminus_judged(tmp_path: Path, harbor: Path, monkeypatch) -> None:
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(harbor))
    monkeypatch.setenv("DOUBLE_API_KEY", "double-key")
    runs = tmp_path / "runs"
    with TerminusAndJudgeDouble() as model:
        argv = ["run", "--harness", "harbor", "--benchmark", "skill-evals", "--model",
                "openai/double-model", "--base-url", model.url, "--api-key-env",
                "DOUBLE_API_KEY", "--skills", str(_pool(tmp_path)), "--concurrency", "4",
                "-o", str(runs), "--no-report"]  # fmt: skip
        out = CliRunner().invoke(cli, argv)
        assert out.exit_code == 0, out.output
        assert model.unknown == 0
        assert dict(model.agent_requests) == PER_TRIAL
        # 4 answers, each graded twice (--judge-repeats' default)
        assert len(model.judge_requests) == 8
        # The same command again: nothing is run or judged again, no row is added.
        again = CliRunner().invoke(cli, argv)
        assert again.exit_code == 0, again.output
        assert dict(model.agent_requests) == PER_TRIAL and len(model.judge_requests) == 8
    assert "imported 2 pair(s) (0 new, 2 already recorded)" in again.output
    assert "judge: 4 trial(s) to grade with openai/double-model@" in out.output

    (run,) = sorted(runs.glob("run-harbor-*"))
    rows = pq.read_table(run / "transitions.parquet").to_pylist()
    assert sorted(r["task_id"] for r in rows) == sorted(EXPECTED)
    for row in rows:
        se, sd, skills = EXPECTED[row["task_id"]]
        assert (row["se_correct"], row["sd_correct"]) == (se, sd), row["task_id"]
        assert list(row["skills_returned"]) == skills, row["task_id"]
        assert row["detector"] == "atif" and row["arm_integrity"] == "ok"
        assert row["provenance"] == "run:harbor" and row["benchmark"] == "harbor:skill-evals"
        assert row["judged_by"].startswith("openai/double-model@")
    traces = {
        (t["task_id"], t["arm"]): t for t in pq.read_table(run / "traces.parquet").to_pylist()
    }
    # what the judge read: the final message, then the output file the agent left
    assert traces[("city-facts/largest", "se")]["final_answer"] == (
        "Analysis: The answer is in the file.\nPlan: Finish.\n\n"
        '<file name="outputs/answer.txt">\nTokyo\n\n</file>'
    )
    assert "Delhi" in traces[("city-facts/largest", "sd")]["final_answer"]
    assert traces[("city-facts/distance", "sd")]["final_answer"] == (
        "Analysis: About 465 kilometres by road.\nPlan: Finish."
    )
    for trace in traces.values():
        record = json.loads(trace["judge_verdicts"])
        assert record["n_valid"] == 2 and trace["grader"] == "expectations"
    # Blinded: the two arms' identical distance answers gave byte-identical judge requests
    # (one body per repeat's seed, each sent once per arm).
    distance = [r for r in model.judge_requests if b"Paris to Lyon" in r]
    assert len(distance) == 4 and len(set(distance)) == 2
    assert not any(b"available_skills" in r or b"city-facts" in r for r in model.judge_requests)
    report = CliRunner().invoke(
        cli, ["report", str(runs), "--resamples", "200", "--format", "json"]
    )
    assert report.exit_code == 0, report.output
    (cell,) = json.loads(report.output)
    assert (cell["n_pairs"], cell["n_cond"], cell["b_cond"], cell["c_cond"]) == (2, 1, 1, 0)
    text = CliRunner().invoke(
        cli, ["report", str(runs), "--resamples", "200", "--format", "markdown"]
    )
    lines = text.output.splitlines()
    # judged like a chat-loop judged cell: the judge's noise (4 answers, unanimous repeats) and
    # one row per skill on its own evals (SE met 2 of 2 expectations, SD 1 of 2)
    assert any(line.endswith("| 4 | 0.0 | 0 | 0 | 0/1 | 0/0 | 0 | 0 |") for line in lines)
    assert any(
        line.endswith("| city-facts | 2 | 50.0 | 1 | 0 | +100.0 | 100.0 | 50.0 |") for line in lines
    )
    # Published as a judged cell: the card's judge-noise row for it (no Hub write: --dry-run).
    hub = tmp_path / "hub"
    push = CliRunner().invoke(cli, ["push", str(run), "--repo", "me/evals", "--dry-run", str(hub)])
    assert push.exit_code == 0, push.output
    card = (hub / "README.md").read_text().splitlines()
    judged = [line for line in card if "harbor:skill-evals" in line and "0.0 %" in line]
    assert len(judged) == 1 and judged[0].endswith("| 0.0 % | 0 | 0 | 0 of 1 / 0 of 0 | 0 / 0 |")
    # The board calls the cell self-judged: its judge is the agent's own model.
    from hf_skillfollow.space_app._labels import add_labels

    board = pq.read_table(run / "transitions.parquet").to_pandas()
    add_labels(board)
    assert board["_self_judged"].all() and set(board["judge_model"]) == {"openai/double-model"}
    # the answer key stayed out of what the skill-enabled arm was given
    (work,) = runs.glob("harbor-*")
    assert not (work / "skills" / "city-facts" / "evals").exists()
