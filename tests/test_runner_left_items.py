"""The chat-loop runner's left items: a redirecting model endpoint, a pair that raises, the
error kind of a malformed response.

The model is `ScriptedModelServerDouble` (tests/_model_double.py) or a subclass of the shared
HTTP double: real servers on 127.0.0.1 standing in for a model provider, which a test can
neither reach nor steer. `hf-skillfollow run` is invoked in-process (click's runner); the
runner, the openai backend, skill search, scoring and the run store are the real code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from tests._http_double import ChatServerDouble, Reply
from tests._model_double import ScriptedModelServerDouble

#: where the redirecting doubles point: a loopback address nothing listens on
ELSEWHERE = "http://127.0.0.2:9/v1"


def run_cli(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, ["run", *args, "--no-report"], catch_exceptions=False)
    return out.exit_code, out.output


def new_run(url: str, math_file: Path, out: Path, limit: int = 3) -> tuple[int, str]:
    return run_cli("--backend", "openai", "--model", "double-model", "--base-url", url,
                   "--benchmark", "math500", "--tasks-file", str(math_file),
                   "--limit", str(limit), "-o", str(out))  # fmt: skip


def only_run_dir(out: Path) -> Path:
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def records(run_dir: Path) -> list[dict]:
    path = run_dir / "records.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip()]


# ------------------------------------------------------ item 3: a redirecting --base-url


class RedirectingServerDouble(ChatServerDouble):
    """A model provider double whose chat requests are answered `307` to ELSEWHERE; its model
    list too when `models_redirect`, else 404 (some providers list no models)."""

    def __init__(self, *, models_redirect: bool) -> None:
        super().__init__()
        self.models_redirect = models_redirect
        self.posts = 0

    def models(self) -> Reply:
        if self.models_redirect:
            return Reply(status=307, headers={"location": f"{ELSEWHERE}/models"})
        return Reply(status=404, body={"error": {"message": "no model list here"}})

    def answer(self, raw: bytes) -> Reply:
        self.posts += 1
        return Reply(status=307, headers={"location": f"{ELSEWHERE}/chat/completions"})


def test_a_redirecting_model_list_stops_the_start_naming_base_url_and_the_target(
    tmp_path: Path, math_file: Path
) -> None:
    """Was: 'cannot reach ...: HTTP 307: redirect to ... not followed', which named neither
    the flag to change nor that the redirect is refused on purpose."""
    with RedirectingServerDouble(models_redirect=True) as double:
        code, output = new_run(double.url, math_file, tmp_path / "out")
    assert code == 1 and double.posts == 0
    (line,) = [x for x in output.splitlines() if x.startswith("Error:")]
    assert f"the model endpoint {double.url}/models answered a redirect" in line
    assert f"redirect to '{ELSEWHERE}/models'" in line
    assert "give the address it redirects to as --base-url" in line


def test_a_redirected_chat_request_stops_the_run_at_once_naming_base_url(
    tmp_path: Path, math_file: Path, math_tasks: list
) -> None:
    """Was: a server listing no models (404) but redirecting chat requests passed the start
    check, and every pair was recorded as failed ('HTTP 307: ... not followed', 3 errors),
    exit status 0. Now the first redirect stops the run with one line naming --base-url and
    the target, records no pair, and the run resumes at the final address."""
    out = tmp_path / "out"
    with RedirectingServerDouble(models_redirect=False) as double:
        code, output = new_run(double.url, math_file, out, limit=3)
    assert code == 1, output
    (line,) = [x for x in output.splitlines() if x.startswith("Error:")]
    assert f"the model endpoint {double.url}/chat/completions answered a redirect" in line
    assert f"redirect to '{ELSEWHERE}/chat/completions'" in line
    assert "give the address it redirects to as --base-url" in line
    run_dir = only_run_dir(out)
    assert f"continue with --resume {run_dir}" in line
    assert records(run_dir) == []  # no failed pair was recorded for the redirect
    with ScriptedModelServerDouble(math_tasks) as good:
        code, output = run_cli("--resume", str(run_dir), "--base-url", good.url)
    assert code == 0, output
    done = records(run_dir)
    assert len(done) == 3
    assert all(r["transition"]["se_error"] is None for r in done)
    assert all(r["transition"]["sd_error"] is None for r in done)


# ------------------------------------------------- item 2: a pair that raises inside the toolkit


class GraderBugDouble:
    """A test double of a grader with a bug on one hostile task: it stands in for
    `scoring.score_answer_async` and raises `exc` for the first task it is asked about, and
    scores every other task with the real grader. No real input was found that makes a pair
    raise (the backends and graders turn bad input into errors), so the bug is planted."""

    def __init__(self, real: object, exc: BaseException) -> None:
        self.real, self.exc = real, exc
        self.bad: str | None = None

    async def __call__(self, task: object, answer: str) -> object:
        self.bad = self.bad or task.task_id
        if task.task_id == self.bad:
            raise self.exc
        return await self.real(task, answer)


def plant_grader_bug(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> GraderBugDouble:
    import hf_skillfollow.scoring as scoring

    double = GraderBugDouble(scoring.score_answer_async, exc)
    monkeypatch.setattr(scoring, "score_answer_async", double)
    return double


def test_a_pair_that_raises_is_one_failed_row_and_the_run_goes_on(
    tmp_path: Path, math_file: Path, math_tasks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: the ValueError came out of `hf-skillfollow run` as a traceback, the other pairs
    were abandoned and no tables were written. Now the pair is recorded with both arms'
    error naming the exception (bounded), the others finish, and the summary counts it."""
    planted = plant_grader_bug(monkeypatch, ValueError("grader bug (double) " + "x" * 10_000))
    out = tmp_path / "out"
    with ScriptedModelServerDouble(math_tasks) as double:
        code, output = new_run(double.url, math_file, out, limit=3)
    assert code == 0, output
    assert "1 errors" in output and "wrote 3 transitions" in output
    run_dir = only_run_dir(out)
    by_id = {r["task_id"]: r["transition"] for r in records(run_dir)}
    assert len(by_id) == 3 and planted.bad in by_id
    failed = by_id.pop(planted.bad)
    assert failed["se_error"] == failed["sd_error"]
    assert failed["se_error"].startswith("pair failed: ValueError: grader bug (double) xxx")
    assert len(failed["se_error"]) == 500
    assert (failed["se_correct"], failed["sd_correct"], failed["arm_integrity"]) == (
        False,
        False,
        None,
    )
    assert all(t["se_error"] is None and t["sd_error"] is None for t in by_id.values())
    # the failed pair is an ordinary errored row: `--retry-errors all` runs it again
    monkeypatch.undo()
    with ScriptedModelServerDouble(math_tasks) as double:
        code, output = run_cli("--resume", str(run_dir), "--base-url", double.url,
                               "--retry-errors", "all")  # fmt: skip
    assert code == 0, output
    again = {r["task_id"]: r["transition"] for r in records(run_dir)}
    assert again[planted.bad]["se_error"] is None and again[planted.bad]["sd_error"] is None


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        (KeyboardInterrupt(), "Aborted!"),
        (RuntimeError("the sandbox cannot start (double)"), "continue with --resume"),
    ],
    ids=["interrupt", "sandbox down"],
)
def test_an_interrupt_or_a_failure_of_the_machine_still_stops_the_run_resumably(
    tmp_path: Path,
    math_file: Path,
    math_tasks: list,
    monkeypatch: pytest.MonkeyPatch,
    exc: BaseException,
    said: str,
) -> None:
    """The guard takes one task's failure, not Ctrl-C nor what would fail every pair (an
    OSError, a RuntimeError such as a sandbox or worker that cannot start): those stop the
    run, the pair is not recorded, and resume finishes it."""
    planted = plant_grader_bug(monkeypatch, exc)
    out = tmp_path / "out"
    with ScriptedModelServerDouble(math_tasks) as double:
        code, output = new_run(double.url, math_file, out, limit=3)
    assert code == 1 and said in output, output
    run_dir = only_run_dir(out)
    assert planted.bad not in {r["task_id"] for r in records(run_dir)}
    monkeypatch.undo()
    with ScriptedModelServerDouble(math_tasks) as double:
        code, output = run_cli("--resume", str(run_dir), "--base-url", double.url)
    assert code == 0, output
    done = records(run_dir)
    assert len(done) == 3 and not any(r["transition"]["se_error"] for r in done)


# ------------------------------------------ item 1: the error kind of a malformed response


class MalformedForOneTaskDouble(ScriptedModelServerDouble):
    """A model provider double answering every request of one task (the first it is asked
    about) with a body that is no chat completion (`choices` a string); the others as the
    scripted model does."""

    bad_prompt: str | None = None

    def reply(self, body: dict) -> dict:
        prompt = next(m["content"] for m in body["messages"] if m.get("role") == "user")
        self.bad_prompt = self.bad_prompt or prompt
        if prompt == self.bad_prompt:
            self.requests += 1
            return {"id": "x", "choices": "not a list"}
        return super().reply(body)


def test_a_malformed_response_is_kept_on_resume_and_the_note_says_so(
    tmp_path: Path, math_file: Path, math_tasks: list
) -> None:
    """A malformed response is not retried by a default resume (kind `malformed`, docs/runs.md
    says why): it does not ask the same server again. Was: such a resume said nothing, so the
    user could not tell the pair was kept nor how to run it again; now one line names the
    kind (`malformed`), an error text of it, `--retry-errors malformed` and
    `--retry-errors all`, which run it again (tests/test_retry_malformed_and_cpu.py)."""
    out = tmp_path / "out"
    with MalformedForOneTaskDouble(math_tasks) as broken:
        code, output = new_run(broken.url, math_file, out, limit=3)
        assert code == 0, output
        run_dir = only_run_dir(out)
        errored = [r["transition"] for r in records(run_dir) if r["transition"]["se_error"]]
        assert [t["se_error"] for t in errored] == [
            "malformed response: 'choices' is str, not a list"
        ]
        asked = broken.requests
        code, output = run_cli("--resume", str(run_dir), "--base-url", broken.url)
        assert code == 0 and broken.requests == asked, output  # not asked again
    assert (
        f"{run_dir / 'records.jsonl'}: errored pairs kept, not run again with --retry-errors "
        "transport: 1 malformed (e.g. \"malformed response: 'choices' is str, not a list\"); "
        "--retry-errors malformed runs those again, --retry-errors all runs every errored pair again"
    ) in " ".join(output.split())
    with ScriptedModelServerDouble(math_tasks) as good:
        code, output = run_cli("--resume", str(run_dir), "--base-url", good.url,
                               "--retry-errors", "all")  # fmt: skip
    assert code == 0 and "errored pairs kept" not in output, output
    assert not any(r["transition"]["se_error"] for r in records(run_dir))
