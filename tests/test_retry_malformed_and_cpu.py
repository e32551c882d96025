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
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow._errors import RETRY_CHOICES, error_kind
from hf_skillfollow.cli import cli
from hf_skillfollow.tasks import load_tasks
from tests._http_double import Reply
from tests._model_double import ScriptedModelServerDouble

MALFORMED = "malformed response: 'choices' is str, not a list"


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
        # a plain resume keeps them all, names their kinds and how to rerun the malformed ones
        asked = dict(broken.asked)
        code, output = run_cli("--resume", str(run_dir), "--base-url", broken.url)
        assert code == 0 and broken.asked == asked, output
    assert "2 malformed (e.g. \"malformed response: 'choices' is str, not a list\")" in output
    assert "1 other (e.g. 'HTTP 400" in output
    assert "; --retry-errors malformed runs those again, --retry-errors all runs" in output
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


# ------------------------------------------------- item 2: a CPU quota per sandbox trial


def test_cpus_over_the_host_or_not_above_zero_are_refused_naming_file_and_key() -> None:
    from hf_skillfollow.harness._nsinit import check_cpus, cpu_quota_us, host_cpus

    assert 1 <= host_cpus() <= (os.cpu_count() or 1)
    for fine in (None, 0.5, 1, 4):
        check_cpus("t/task.toml", fine, 4)
    with pytest.raises(ValueError) as err:
        check_cpus("t/task.toml", 5, 4)
    assert str(err.value) == (
        "t/task.toml: [environment] cpus = 5: over the sandbox's ceiling of 4 (the cores this "
        "host lets Harbor run on)"
    )
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError, match=rf"^t/task.toml: \[environment\] cpus = {bad}: not above 0$"):  # fmt: skip
            check_cpus("t/task.toml", bad, 4)
    assert cpu_quota_us(1, 100_000) == 100_000
    assert cpu_quota_us(2, 50_000) == 100_000
    assert cpu_quota_us(0.25, 100_000) == 25_000
    assert cpu_quota_us(0.001, 100_000) == 1000  # the kernel's least quota


def test_a_cpu_cgroup_on_a_v2_layout_enables_the_controller_and_writes_cpu_max(
    tmp_path: Path,
) -> None:
    """A folder laid out as a cgroup v2 root (the kernel is not involved: this host has v1):
    the controller is handed down root -> hf-skillfollow, and the trial's cpu.max is set."""
    from hf_skillfollow.harness._nsinit import make_cpu_cgroup

    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("\n")
    made = make_cpu_cgroup("task__a1b2/c__env", 1.5, roots=(str(tmp_path / "no-v1"), str(tmp_path)))
    assert made == tmp_path / "hf-skillfollow" / "task__a1b2_c__env"
    assert (made / "cpu.max").read_text() == "150000 100000"
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu"
    assert (tmp_path / "hf-skillfollow" / "cgroup.subtree_control").read_text() == "+cpu"
    # no cpu controller anywhere: None (the trial log then warns)
    (tmp_path / "cgroup.controllers").write_text("memory pids\n")
    assert make_cpu_cgroup("x", 1, roots=(str(tmp_path / "no-v1"), str(tmp_path))) is None


V1_CPU = Path("/sys/fs/cgroup/cpu")


def _v1_cpu_writable() -> bool:
    return os.geteuid() == 0 and os.access(V1_CPU / "cpu.cfs_quota_us", os.W_OK)


@pytest.mark.skipif(not _v1_cpu_writable(), reason="needs root and a v1 cpu cgroup (as here)")
def test_a_v1_cpu_cgroup_gets_the_quota_and_throttles_a_busy_process() -> None:
    """On this host's real v1 cpu hierarchy: the cgroup's quota is `cpus` periods, and a busy
    loop moved into it (0.05 cores) is throttled by the kernel."""
    from hf_skillfollow.harness._nsinit import make_cpu_cgroup

    name = f"h6-probe-{os.getpid()}"
    made = make_cpu_cgroup(name, 0.05)
    assert made == V1_CPU / "hf-skillfollow" / name
    busy = None
    try:
        period = int((made / "cpu.cfs_period_us").read_text())
        assert int((made / "cpu.cfs_quota_us").read_text()) == round(0.05 * period)
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        (made / "cgroup.procs").write_text(str(busy.pid))
        time.sleep(0.6)
        stat = dict(line.split() for line in (made / "cpu.stat").read_text().splitlines())
        assert int(stat["nr_throttled"]) > 0, stat
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        for _ in range(50):
            try:
                made.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    assert not made.exists()


def _trial_task(root: Path, name: str, cpus: str, script: str) -> None:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "instruction.md").write_text("Nothing to do.\n")
    (task / "tests" / "test.sh").write_text(
        f"#!/bin/bash\n{script}\necho 1 > /logs/verifier/reward.txt\n"
    )
    (task / "task.toml").write_text(
        '[verifier]\ntimeout_sec = 60.0\n[environment]\nworkdir = "/app"\n'
        f'network_mode = "no-network"\n{cpus}'
    )


@pytest.mark.harbor
@pytest.mark.timeout(600)
def test_a_sandbox_trial_runs_under_its_cpu_quota(tmp_path: Path) -> None:
    """Through real Harbor and the sandbox environment (nop agent): while each trial runs, its
    cgroup under the host's v1 cpu hierarchy has the quota of its task's cpus (no key: 1
    core), the verifier's own process is in it, and it is gone after the trial; a task asking
    for more cores than the host has fails at start in one line naming task.toml and cpus."""
    from hf_skillfollow.harness._nsinit import host_cpus

    if not _v1_cpu_writable():
        pytest.fail("needs root and a v1 cpu cgroup (as the CI's host)")
    root = Path(__file__).resolve().parents[1]
    harbor = Path(os.environ.get("SKILLFOLLOW_HARBOR", root / ".venv-harbor" / "bin" / "harbor"))
    if not harbor.is_file():
        pytest.fail("Harbor is not installed: run .ci/setup-harbor (the harbor marker needs it)")
    tasks = tmp_path / "tasks"
    probe = "cat /proc/self/cgroup > /logs/verifier/cgroup.txt; sleep 3"
    _trial_task(tasks, "cpuone", "", probe)
    _trial_task(tasks, "cpuall", f"cpus = {host_cpus()}\n", probe)
    _trial_task(tasks, "cpugreedy", f"cpus = {host_cpus() + 1}\n", "")
    job = {
        "job_name": "cpus", "jobs_dir": str(tmp_path / "jobs"), "n_attempts": 1, "quiet": True,
        "environment": {"import_path": "hf_skillfollow.harness._env:SandboxEnvironment"},
        "agents": [{"name": "nop"}], "datasets": [{"path": str(tasks)}],
    }  # fmt: skip
    (tmp_path / "job.json").write_text(json.dumps(job))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HARBOR_TELEMETRY": "0"}
    seen: dict[str, set[tuple[int, int]]] = {}
    with subprocess.Popen([str(harbor), "run", "-c", str(tmp_path / "job.json"), "-y"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as run:  # fmt: skip
        deadline = time.monotonic() + 300
        while run.poll() is None and time.monotonic() < deadline:
            for cgroup in (V1_CPU / "hf-skillfollow").glob("cpu*__*__env"):
                try:
                    quota = int((cgroup / "cpu.cfs_quota_us").read_text())
                    period = int((cgroup / "cpu.cfs_period_us").read_text())
                    held = (cgroup / "cgroup.procs").read_text().split()
                except (OSError, ValueError):
                    continue  # made or removed meanwhile
                if held:
                    seen.setdefault(cgroup.name.split("__")[0], set()).add((quota, period))
            time.sleep(0.05)
        run.kill()
    period = int((V1_CPU / "cpu.cfs_period_us").read_text())
    assert seen == {"cpuone": {(period, period)}, "cpuall": {(host_cpus() * period, period)}}
    for name in ("cpuone", "cpuall"):
        (trial,) = (tmp_path / "jobs" / "cpus").glob(f"{name}__*")
        assert json.loads((trial / "result.json").read_text()).get("exception_info") is None
        lines = (trial / "verifier" / "cgroup.txt").read_text().splitlines()
        assert f"cpu:/hf-skillfollow/{trial.name}__env" in [x.split(":", 1)[1] for x in lines]
        assert not (V1_CPU / "hf-skillfollow" / f"{trial.name}__env").exists()
    (greedy,) = (tmp_path / "jobs" / "cpus").glob("cpugreedy__*/result.json")
    message = (json.loads(greedy.read_text()).get("exception_info") or {}).get(
        "exception_message", ""
    )
    assert message.startswith(
        f"{tasks / 'cpugreedy' / 'task.toml'}: [environment] cpus = {host_cpus() + 1}: over"
    )


def test_a_failed_pair_quoting_context_wording_is_of_kind_other() -> None:
    """A pair that raised inside the toolkit is `other` (docs/runs.md), whatever its exception
    quotes: the task's text may hold a provider's context-length wording."""
    from hf_skillfollow.runner import PAIR_FAILED

    quoted = f"{PAIR_FAILED}ValueError: please reduce the length of the prompt"
    assert error_kind(quoted) == "other"
    assert error_kind("HTTP 400: please reduce the length of the prompt") == "context"
