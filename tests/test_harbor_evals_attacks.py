"""Hostile input to `run --harness harbor --benchmark skill-evals`, without Harbor.

A skill author's evals and files (a NUL in a name, a file that lands in ``outputs/``, a
``SKILL.md`` copied into both arms' workspace, an ``evals`` folder that is the skill folder,
a pool whose evals copy the same large file again and again) and an agent's trial (an output
name that is not UTF-8, a planted ``outputs.json`` link, a final message of many megabytes or
in ATIF content parts, a forged ``outputs.json`` over the collector's total, an answer that
is only our own notes). Each test failed on the code before the fix it names in its
docstring; every expected string and count is written by hand from the fixtures here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow import tasks_custom
from hf_skillfollow._task import TaskLoadError
from hf_skillfollow.cli import cli
from hf_skillfollow.harness import _evals_tasks, _judged, _outputs_collector
from hf_skillfollow.harness._evals_tasks import EvalTaskError
from hf_skillfollow.skills import load_pool
from tests.test_harbor_evals import _pool, _trial


def _one(files: list[str]) -> dict:
    return {"evals": [{"id": 1, "prompt": "p", "files": files, "expectations": ["e"]}]}


def _put(pool: Path, rel: str, blob: bytes) -> None:
    path = pool / "city-facts" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)


# --- the skill author's evals -----------------------------------------------------------------


def test_a_nul_in_a_file_name_is_one_line_naming_the_eval(tmp_path: Path) -> None:
    """Was `ValueError: embedded null byte` from the path resolver: the CLI printed
    'Error: embedded null byte', naming neither the evals.json, the eval nor the file."""
    pool = _pool(tmp_path, _one(["evals/files/a\u0000b.csv"]))
    for workspace in (False, True):  # the chat loop's attachments and the workspace form
        with pytest.raises(TaskLoadError) as err:
            tasks_custom.load_skill_evals(load_pool(pool), workspace=workspace)
        message = str(err.value)
        assert message.startswith(f"{pool / 'city-facts' / 'evals' / 'evals.json'}: eval '1': ")
        assert "NUL" in message and "\n" not in message
    argv = ["run", "--harness", "harbor", "--model", "openai/m", "--base-url",
            "http://127.0.0.1:9/v1", "--benchmark", "skill-evals", "--skills", str(pool),
            "-o", str(tmp_path / "runs")]  # fmt: skip
    out = CliRunner().invoke(cli, argv)
    assert out.exit_code != 0
    (line,) = out.output.strip().splitlines()
    assert "evals.json: eval '1': file 'evals/files/a\\x00b.csv': " in line


SKILL = b"---\nname: helper\ndescription: helps\n---\nThe answer is Tokyo, always.\n"


@pytest.mark.parametrize(
    ("rel", "blob", "said"),
    [
        ("outputs", b"\x00Tokyo", "outputs/"),
        ("outputs/seed.bin", b"\x00Tokyo", "outputs/"),
        ("Outputs/x.bin", b"\x00Tokyo", "outputs/"),
        (".claude/skills/helper/SKILL.md", SKILL, "skill-disabled arm"),
        ("evals/files/.agents/skills/helper/skill.md", SKILL, "skill-disabled arm"),
    ],
)
def test_a_file_in_a_place_of_the_workspace_that_changes_the_run_is_refused(
    tmp_path: Path, rel: str, blob: bytes, said: str
) -> None:
    """Was: `outputs` crashed the task writer with IsADirectoryError (the empty outputs/ was
    there), and `outputs/seed.bin` was copied into /app/outputs/, where the judge reads it as
    what the agent produced (a binary file is not served to the agent, so no other guard
    stopped it; `Outputs/` is another folder on Linux, not on a case-insensitive checkout).
    And a SKILL.md that is no skill of the pool (in a hidden folder, so never served) was
    copied into /app of both arms, where an agent discovers it as a skill (Claude Code reads
    /app/.claude/skills/): the skill-disabled arm had a skill, and the arm-integrity check
    (pool texts only) could not see it."""
    pool = _pool(tmp_path, _one([rel]))
    _put(pool, rel, blob)
    with pytest.raises(EvalTaskError) as err:
        _evals_tasks.load(load_pool(pool))
    assert f"eval '1': file {rel!r}: " in str(err.value)
    assert said in str(err.value) and "\n" not in str(err.value)


def test_a_skill_md_that_no_agent_loads_is_a_plain_input_file(tmp_path: Path) -> None:
    """The input of a skill-authoring eval ("review this draft skill") is a SKILL.md in the
    eval's files: no agent looks for skills in evals/files/, so it is copied like any file."""
    rel = "evals/files/draft/SKILL.md"
    pool = _pool(tmp_path, _one([rel]))
    _put(pool, rel, SKILL)
    (task,) = _evals_tasks.load(load_pool(pool)).tasks.values()
    assert task.problem["workspace_files"] == ((rel, SKILL),)


@pytest.mark.parametrize(
    ("blob", "what"),
    [
        (b"Notes.\n# City facts\n\nSort the table by population with\n  `sort -t, -k2 -n`.\n",
         "skill 'city-facts' SKILL.md body"),
        (b"\x00PDF-ish\nHow this skill reads   city tables, in full.\x00",
         "skill 'city-facts' file 'references/guide.md'"),
    ],
)  # fmt: skip
def test_a_workspace_file_holding_a_skills_text_is_refused(
    tmp_path: Path, blob: bytes, what: str
) -> None:
    """Was accepted: the guard compared whole files only, so a file that holds a SKILL.md body
    or a served file inside other text (or in a binary file, which `strings` reads) went into
    both arms' workspace. The chat loop records such an attachment as an arm-integrity
    violation from the SD request's text; a harness trial's check looks only for skills
    listed or loaded by name, so nothing would have shown it."""
    rel = "evals/files/notes.bin"
    pool = _pool(tmp_path, _one([rel]))
    _put(pool, rel, blob)
    with pytest.raises(EvalTaskError) as err:
        _evals_tasks.load(load_pool(pool))
    assert f"eval '1': file {rel!r}: holds {what}" in str(err.value)
    assert "skill-disabled arm" in str(err.value) and "\n" not in str(err.value)


def test_an_evals_folder_that_is_the_skill_folder_is_refused(tmp_path: Path) -> None:
    """Was accepted silently: with `evals -> .`, the resolved evals folder is the skill
    folder, so `without_evals` withdrew every file of the skill (its scripts too) from the
    skill-enabled arm as if it were an answer key; the SE arm ran with a gutted skill."""
    folder = tmp_path / "pool" / "tool"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: tool\ndescription: d\n---\nRun scripts/go.sh\n")
    (folder / "scripts" / "go.sh").write_text("#!/bin/sh\necho the tool this skill is about\n")
    (folder / "evals.json").write_text(json.dumps(_one([])))
    os.symlink(".", folder / "evals")
    pool = load_pool(tmp_path / "pool")
    assert "scripts/go.sh" in pool.get("tool").resources
    for workspace in (False, True):
        with pytest.raises(TaskLoadError) as err:
            tasks_custom.load_skill_evals(pool, workspace=workspace)
        assert str(err.value).startswith(f"{folder / 'evals'}: resolves to the skill folder")
        assert "\n" not in str(err.value)


def test_the_pools_workspace_files_are_bounded_together(tmp_path: Path, monkeypatch) -> None:
    """Was unbounded: each eval may copy 32 MiB, and 10,000 evals may name the same file (or
    symlinks to it), so one small evals.json held up to 320 GB in memory and on disk. The
    bound is lowered here so the test reads 200 KB, not 256 MiB."""
    monkeypatch.setattr(tasks_custom, "MAX_WORKSPACE_POOL_TOTAL", 150_000, raising=False)
    evals = {"evals": [{"id": i, "prompt": "p", "files": ["evals/files/big.bin"],
                        "expectations": ["e"]} for i in range(5)]}  # fmt: skip
    pool = _pool(tmp_path, evals)
    _put(pool, "evals/files/big.bin", b"\x00" * 50_000)
    with pytest.raises(EvalTaskError) as err:
        _evals_tasks.load(load_pool(pool))
    # the fourth eval's copy brings the pool to 200,000 bytes
    assert str(err.value).startswith(f"{pool / 'city-facts' / 'evals' / 'evals.json'}: eval '3'")
    assert "exceed 150000 bytes" in str(err.value) and "\n" not in str(err.value)
    monkeypatch.setattr(tasks_custom, "MAX_WORKSPACE_POOL_TOTAL", 250_000, raising=False)
    assert len(_evals_tasks.load(load_pool(pool)).tasks) == 5


def test_an_eval_the_judge_could_never_read_is_refused_before_any_trial(tmp_path: Path) -> None:
    """Was accepted: the judge is shown the workspace's text files in full (up to 32 MiB per
    eval), but reads at most INPUT_MAX_CHARS (200,000) of task and answer together, so every
    trial of both arms became a `truncated` grading failure, after every agent had run."""
    pool = _pool(tmp_path, _one(["evals/files/log.txt"]))
    _put(pool, "evals/files/log.txt", b"GET /index.html 200\n" * 10_500)  # 210,000 bytes
    with pytest.raises(EvalTaskError) as err:
        _evals_tasks.load(load_pool(pool))
    evals_file = pool / "city-facts" / "evals" / "evals.json"
    assert str(err.value).startswith(f"{evals_file}: eval '1': the judge would read ")
    assert "at most 200000" in str(err.value) and "\n" not in str(err.value)
    _put(pool, "evals/files/log.txt", b"\x00" + b"GET /index.html 200\n" * 10_500)
    assert len(_evals_tasks.load(load_pool(pool)).tasks) == 1  # a binary file: name and size


# --- the agent's outputs (the collector runs in the environment) -----------------------------


def _collect(out: Path, logs: Path) -> subprocess.CompletedProcess:
    script = out.parent / "collect.py"
    script.write_bytes(Path(_outputs_collector.__file__).read_bytes())
    return subprocess.run([sys.executable, "-I", str(script), str(out), str(logs)], timeout=60,
                          capture_output=True, text=True)  # fmt: skip


def test_a_name_that_is_not_utf8_loses_no_other_output(tmp_path: Path) -> None:
    """Was: json.dump raised UnicodeEncodeError on the surrogate-escaped name halfway through
    writing outputs.json, so the host read a cut JSON file ('cannot be read') and the judge
    saw none of the agent's files; reward.txt was not written."""
    out = tmp_path / "outputs"
    out.mkdir()
    (out / "answer.txt").write_text("Tokyo")
    with open(os.path.join(os.fsencode(out), b"r\xffport.txt"), "wb") as fh:
        fh.write(b"population table")
    deep = os.path.join(os.fsencode(out), b"\xfe" * 100)
    os.mkdir(deep)
    with open(os.path.join(deep, b"x.txt"), "wb") as fh:
        fh.write(b"x")
    done = _collect(out, tmp_path / "logs")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "logs" / "reward.txt").read_text() == "0\n"
    found = json.loads((tmp_path / "logs" / "outputs.json").read_text(encoding="utf-8"))
    # the odd name shown with its bytes escaped; a name that escaping makes over 240 left out
    assert found == {
        "files": [{"name": "answer.txt", "bytes": 5, "text": "Tokyo"},
                  {"name": "r\\xffport.txt", "bytes": 16, "text": "population table"}],
        "left_out": [{"name": "\\xfe" * 50 + "...",
                      "why": "a name longer than 240 characters"}],
    }  # fmt: skip
    trial = _trial(tmp_path / "t", [{"source": "agent", "message": "done"}], found)
    assert _judged.read_outputs(trial).problem is None


def test_the_collector_writes_over_a_planted_link_not_through_it(tmp_path: Path) -> None:
    """Was: outputs.json was opened for writing through whatever the agent had left at that
    path, so a link made the collector write its result elsewhere (the trial then had only
    the link, which the host does not follow: the judge saw no outputs)."""
    out, logs = tmp_path / "outputs", tmp_path / "logs"
    out.mkdir()
    logs.mkdir()
    (out / "answer.txt").write_text("Tokyo")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("untouched")
    os.symlink(elsewhere, logs / "outputs.json")
    os.symlink(elsewhere, logs / "reward.txt")
    assert _collect(out, logs).returncode == 0
    assert elsewhere.read_text() == "untouched"
    assert not (logs / "outputs.json").is_symlink() and not (logs / "reward.txt").is_symlink()
    assert json.loads((logs / "outputs.json").read_text())["files"][0]["text"] == "Tokyo"
    assert (logs / "reward.txt").read_text() == "0\n"


# --- what the host reads of a trial -----------------------------------------------------------


def test_a_final_message_in_content_parts_is_the_final_message(tmp_path: Path) -> None:
    """Was skipped: ATIF 1.6+ allows a message as a list of content parts (Harbor's Codex
    writes one when an image is in it); the reader took the previous string message, so the
    judge graded a stale answer."""
    steps = [
        {"source": "agent", "message": "Analysis: reading the table."},
        {"source": "agent", "message": [
            {"type": "text", "text": "Tokyo is the largest."},
            {"type": "image", "source": {"media_type": "image/png", "path": "chart.png"}},
            {"type": "text", "text": "Saved outputs/answer.txt."}]},
    ]  # fmt: skip
    trial = _trial(tmp_path, steps, None)
    assert _judged.final_message(trial) == (
        "Tokyo is the largest.\n[image: chart.png]\nSaved outputs/answer.txt."
    )


def test_a_huge_final_message_or_forged_outputs_stay_bounded(tmp_path: Path) -> None:
    """Was unbounded: a final message of up to 32 MiB (the trajectory's bound) became the
    answer, kept whole in the verdict file and the traces' final_answer (the judge itself
    refuses more than INPUT_MAX_CHARS); and a forged outputs.json could carry 32 files of
    64 Ki characters each (2 Mi characters), eight times what the collector ever writes."""
    from hf_skillfollow.judge._request import INPUT_MAX_CHARS

    message = "Tokyo " * 100_000 + "end"  # 600,003 characters
    trial = _trial(tmp_path / "a", [{"source": "agent", "message": message}], None)
    read = _judged.final_message(trial)
    assert read.startswith("Tokyo Tokyo") and INPUT_MAX_CHARS < len(read) < INPUT_MAX_CHARS + 200
    assert read.endswith("(the final message is cut here: 600003 characters in all)")
    files = [{"name": f"f{i}.txt", "bytes": 60_000, "text": "y" * 60_000} for i in range(5)]
    forged = _trial(tmp_path / "b", [], {"files": files, "left_out": []})
    outputs = _judged.read_outputs(forged)
    assert outputs.files == () and "over the collector's 262144" in str(outputs.problem)


def test_an_unreadable_outputs_file_tells_the_judge_no_path(tmp_path: Path) -> None:
    """Was: the note 'outputs.json cannot be read (...)' quoted the host path of the trial,
    `.../jobs/se/<trial>/verifier/outputs.json`, into the answer the judge reads: the arm's
    job folder, and the trial's own name, so the judge could tell the arm, and two trials
    that left the same message and files no longer gave byte-identical requests."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "outputs.json").write_text(json.dumps({"files": [], "left_out": []}))
    answers = []
    for arm, name in (("se", "city-facts-1__Ab3"), ("sd", "city-facts-1__Zq9")):
        trial = tmp_path / "jobs" / arm / name
        (trial / "agent").mkdir(parents=True)
        steps = [{"source": "agent", "message": "Tokyo"}]
        (trial / "agent" / "trajectory.json").write_text(json.dumps({"steps": steps}))
        os.symlink(tmp_path / "outside", trial / "verifier")  # a linked verifier folder
        read = _judged.read_outputs(trial)
        assert read.files == () and read.problem is not None
        answers.append(_judged.answer_text(_judged.final_message(trial), read))
    assert answers[0] == answers[1]
    assert "jobs" not in answers[0] and str(tmp_path) not in answers[0]
    assert "a link leading out of the trial folder" in answers[0]


def test_an_answer_of_only_our_notes_is_empty(tmp_path: Path) -> None:
    """Was judged: with no final message and no file collected, the answer was only our own
    note ('output files not read', 'not collected: ...'), which the judge was asked about;
    the chat loop never sends an empty answer (the judge could find that nothing meets
    'contains no profanity'). Now the answer is empty: incorrect, not judged."""
    assert _judged.answer_text("", _judged.Outputs(problem="no outputs.json")) == ""
    assert _judged.answer_text("", _judged.Outputs(left_out=(("big.txt", "too large"),))) == ""
    kept = _judged.answer_text("", _judged.Outputs(files=(("a.txt", "Tokyo", 5),)))
    assert kept == '<file name="outputs/a.txt">\nTokyo\n</file>'
