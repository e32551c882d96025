"""Retrying exactly the malformed responses; a CPU quota per sandbox trial.

Item 1: a malformed model response (`malformed response: ...`) is its own error kind, so
`--retry-errors malformed` runs exactly those pairs again once the endpoint is mended. The
model is a *model provider double*: real HTTP servers on 127.0.0.1 (tests/_http_double.py)
standing in for a provider, which a test can neither reach nor steer; `hf-skillfollow run`
and `sweep` are invoked in-process (click's runner) and everything else is the real code.

Item 2: the sandbox environment gives each trial a CPU quota (`[environment] cpus`) in the
host's cpu cgroup where it is writable. The stdlib part (`harness._nsinit`) is tested on this
host's real cgroup hierarchy (skipped where it is not writable) and on a folder laid out as a
cgroup v2 one; the `harbor` test runs a real trial through Harbor.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow._errors import RETRY_CHOICES, error_kind
from hf_skillfollow.cli import cli
from hf_skillfollow.tasks import load_tasks
from tests._http_double import Reply
from tests._model_double import ScriptedModelServerDouble

MALFORMED = "malformed response: 'choices' is str, not a list"


@pytest.fixture(scope="module")
def math_file(data_dir: Path) -> Path:
    return data_dir / "math500.jsonl"


@pytest.fixture(scope="module")
def math_tasks(math_file: Path) -> list:
    return load_tasks("math500", math_file)[0]


def run_cli(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, ["run", *args, "--no-report"], catch_exceptions=False)
    return out.exit_code, " ".join(out.output.split())


def records(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    return {r["task_id"]: r["transition"] for r in map(json.loads, filter(str.strip, lines))}


class BrokenEndpointDouble(ScriptedModelServerDouble):
    """A model provider double behind a broken proxy: every request about a task in
    `malformed` is answered with a body that is no chat completion (`choices` a string), one
    about a task in `refused` with HTTP 400 (an `other` error); the rest as the scripted
    model answers. `asked` counts requests per task id."""

    def __init__(self, tasks: list, malformed: set[str], refused: set[str] = frozenset()) -> None:
        super().__init__(tasks)
        self.malformed, self.refused = malformed, refused
        self.asked: dict[str, int] = {}

    def answer(self, raw: bytes) -> Reply:
        body = json.loads(raw or b"{}")
        prompt = next(m["content"] for m in body["messages"] if m.get("role") == "user")
        task_id = self.by_prompt[prompt].task_id
        self.asked[task_id] = self.asked.get(task_id, 0) + 1
        if task_id in self.malformed:
            return Reply(body={"id": "x", "choices": "not a list"})
        if task_id in self.refused:
            return Reply(status=400, body={"error": {"message": "unsupported parameter: seed"}})
        return super().answer(raw)


def test_malformed_is_its_own_kind_and_all_still_retries_it() -> None:
    assert error_kind(MALFORMED) == "malformed"
    # the body of a malformed answer may quote anything: still malformed, not `context`
    assert error_kind("malformed response: ValueError: maximum context length") == "malformed"
    assert error_kind("HTTP 400: malformed response: no") == "other"  # a provider's own text
    assert error_kind("HTTP 400: This model's maximum context length is 8192") == "context"
    assert error_kind("HTTP 429: slow down") == "transport"
    assert RETRY_CHOICES["malformed"] == {"malformed"}
    assert RETRY_CHOICES["all"] >= {"transport", "context", "malformed", "other"}
    assert "malformed" not in RETRY_CHOICES["transport"]


def test_retry_errors_malformed_reruns_exactly_the_malformed_pairs(
    tmp_path: Path, math_file: Path
) -> None:
    """Was: a malformed response was of kind `other`, like an HTTP 400 refusal, so after the
    endpoint was mended only `--retry-errors all` ran it again, together with every other
    errored pair (`--retry-errors malformed` was no choice). Now it reruns those pairs only."""
    four = tmp_path / "math4.jsonl"  # four tasks, so the run holds all four
    four.write_text("".join(math_file.read_text().splitlines(keepends=True)[:4]))
    math_tasks = load_tasks("math500", four)[0]
    ids = [t.task_id for t in math_tasks]
    bad, refused = {ids[0], ids[2]}, {ids[1]}
    out = tmp_path / "out"
    with BrokenEndpointDouble(math_tasks, malformed=bad, refused=refused) as broken:
        code, output = run_cli("--backend", "openai", "--model", "double-model",
                               "--base-url", broken.url, "--benchmark", "math500",
                               "--tasks-file", str(four), "--partition-size", "4", "-o", str(out))  # fmt: skip
        assert code == 0, output
        (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
        first = records(run_dir)
        assert sorted(first) == sorted(ids)
        assert {i for i, t in first.items() if t["se_error"] == MALFORMED} == bad
        assert first[ids[1]]["se_error"].startswith("HTTP 400")
        assert first[ids[3]]["se_error"] is None
        # a plain resume keeps them all and names their kinds
        asked = dict(broken.asked)
        code, output = run_cli("--resume", str(run_dir), "--base-url", broken.url)
        assert code == 0 and broken.asked == asked, output
    assert "2 malformed (e.g. \"malformed response: 'choices' is str, not a list\")" in output
    assert "1 other (e.g. 'HTTP 400" in output
    with BrokenEndpointDouble(math_tasks, malformed=set()) as mended:
        code, output = run_cli("--resume", str(run_dir), "--base-url", mended.url,
                               "--retry-errors", "malformed")  # fmt: skip
        assert code == 0, output
        assert set(mended.asked) == bad  # exactly the malformed pairs, both arms
    assert "2 pair(s) ended in a malformed error" in output
    assert "1 other (e.g. 'HTTP 400" in output and "2 malformed" not in output
    after = records(run_dir)
    assert not any(after[i]["se_error"] or after[i]["sd_error"] for i in bad)
    assert after[ids[1]] == first[ids[1]] and after[ids[3]] == first[ids[3]]  # kept as they were
    rejected = (run_dir / "records.rejected").read_text().splitlines()
    assert len(rejected) == 2 and all("malformed response" in line for line in rejected)


def test_sweep_retry_errors_malformed_plans_and_reruns_only_those(
    tmp_path: Path, math_file: Path
) -> None:
    """The sweep's `--retry-errors` has the same choice (before: click refused `malformed`)."""
    from tests.test_sweep_run import _at, invoke, sweep_file

    three = tmp_path / "math3.jsonl"  # three tasks, so the sweep's cell holds all three
    three.write_text("".join(math_file.read_text().splitlines(keepends=True)[:3]))
    math_tasks = load_tasks("math500", three)[0]
    ids = [t.task_id for t in math_tasks]
    out = tmp_path / "out"
    models = "  - {name: M1, model: double-model}\n"
    with BrokenEndpointDouble(math_tasks, malformed={ids[0]}, refused={ids[1]}) as broken:
        path = sweep_file(tmp_path, broken.url, three, models=models)
        path.write_text(path.read_text().replace("limit: 3,", "limit: 3, partition_size: 3,"))
        invoke(str(path), "-o", str(out))
    code, plan = invoke(str(path), "-o", str(out), "--plan", "--retry-errors", "malformed")
    assert code == 0 and "[2 errored pair(s), 1 to retry]" in plan, plan
    with _at(BrokenEndpointDouble(math_tasks, malformed=set()), broken.url) as mended:
        code, output = invoke(str(path), "-o", str(out), "--retry-errors", "malformed")
    assert set(mended.asked) == {ids[0]}, output
