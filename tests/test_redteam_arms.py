"""Red team, round 3 (issue 37 items 8-13, 17): the two arms differ only in the skills.

Skill pools are real folders read by the real loader; the catalog protocol is driven by
`ScriptedModelDouble` (no available model can be made to read a chosen path on demand) and the
arm-integrity check by a whole `run` against the scripted agent double of tests/_judge_double.py
(the run, the records and the report are real).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hf_skillfollow.skills import SkillPoolError, load_pool, validate_pool
from hf_skillfollow.tasks import TaskLoadError
from hf_skillfollow.tasks_custom import load_skill_evals, without_evals

EVALS = {"evals": [{"id": 1, "prompt": "Say the number.", "expected_output": "42",
                    "expectations": ["says 42", "is polite"]}]}  # fmt: skip


def _skill(root: Path, name: str, body: str = "# Body\n\nDo the thing carefully.") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\n{body}\n")
    return folder


def _with_evals(root: Path, name: str, evals: dict | None = None) -> Path:
    folder = _skill(root, name)
    (folder / "evals").mkdir()
    (folder / "evals" / "evals.json").write_text(json.dumps(evals or EVALS))
    return folder


# --- item 8: answer keys --------------------------------------------------------------------


def test_a_symlinked_evals_folder_is_withdrawn_by_where_the_loader_read(tmp_path: Path) -> None:
    # before: `evals -> data` was loaded through the link and `data/evals.json` stayed served
    folder = _skill(tmp_path / "pool", "s1")
    (folder / "data").mkdir()
    (folder / "data" / "evals.json").write_text(json.dumps(EVALS))
    (folder / "data" / "extra.md").write_text("the expected output is 42, graded on politeness")
    (folder / "notes.md").write_text("an ordinary reference")
    os.symlink("data", folder / "evals")
    pool = load_pool(tmp_path / "pool")
    tasks, _ = load_skill_evals(pool)
    assert [t.task_id for t in tasks] == ["s1/1"]
    assert "data/evals.json" in pool.get("s1").resources
    assert without_evals(pool).get("s1").resources == ("notes.md",)


@pytest.mark.parametrize(
    "copy",
    [
        lambda text: text,
        lambda text: text + "\n",
        lambda text: json.dumps(json.loads(text), indent=4),
        lambda text: json.dumps(json.loads(text), separators=(",", ":")),
        lambda text: json.dumps(json.loads(text)["evals"], indent=1),
    ],
    ids=["exact", "trailing-newline", "pretty", "minified", "the-evals-list"],
)
def test_a_copy_of_an_answer_key_in_another_skill_is_withdrawn(tmp_path: Path, copy) -> None:
    # before: only the skill's own `evals/` prefix and its verbatim copies were withdrawn
    root = tmp_path / "pool"
    key = _with_evals(root, "s1") / "evals" / "evals.json"
    other = _skill(root, "s2")
    (other / "references").mkdir()
    (other / "references" / "answers.json").write_text(copy(key.read_text()))
    (other / "references" / "guide.md").write_text("a real reference")
    pool = load_pool(root)
    assert "references/answers.json" in pool.get("s2").resources
    assert without_evals(pool).get("s2").resources == ("references/guide.md",)


def test_an_eval_may_not_attach_its_own_evals(tmp_path: Path) -> None:
    evals = {"evals": [{**EVALS["evals"][0], "files": ["evals/evals.json"]}]}
    _with_evals(tmp_path / "pool", "s1", evals)
    with pytest.raises(TaskLoadError, match=r"eval '1': file 'evals/evals.json': an answer key"):
        load_skill_evals(load_pool(tmp_path / "pool"))


def test_a_hard_link_to_a_file_outside_is_neither_served_nor_attached(tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("a private file outside the skill folder")
    evals = {"evals": [{**EVALS["evals"][0], "files": ["evals/input.md"]}]}
    folder = _with_evals(tmp_path / "pool", "s1", evals)
    os.link(secret, folder / "linked.md")
    os.link(secret, folder / "evals" / "input.md")
    (folder / "inside.md").write_text("kept")
    os.link(folder / "inside.md", folder / "inside-too.md")  # both names inside: served
    pool = load_pool(tmp_path / "pool")
    skill = pool.get("s1")
    assert "linked.md" not in skill.resources
    assert "hard link" in dict(skill.unserved)["linked.md"]
    assert {"inside.md", "inside-too.md"} <= set(skill.resources)
    with pytest.raises(
        TaskLoadError, match=r"file 'evals/input.md': a hard link to a file outside"
    ):
        load_skill_evals(pool)


def test_a_skill_md_hard_linked_to_a_file_outside_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("---\nname: s1\ndescription: d\n---\nsecret body\n")
    (tmp_path / "pool" / "s1").mkdir(parents=True)
    os.link(outside, tmp_path / "pool" / "s1" / "SKILL.md")
    (error,) = validate_pool(tmp_path / "pool").errors
    assert error.field == "file" and "a hard link to a file outside" in error.message


# --- item 9: pool content in the SD arm -------------------------------------------------------


@pytest.mark.parametrize("attached", ["SKILL.md", "references/guide.md", "evals/copy.md"])
def test_an_eval_attaching_pool_content_is_refused(tmp_path: Path, attached: str) -> None:
    # before: attached to both arms, so the SD request carried the skill
    evals = {"evals": [{**EVALS["evals"][0], "files": [attached]}]}
    folder = _with_evals(tmp_path / "pool", "s1", evals)
    (folder / "references").mkdir()
    (folder / "references" / "guide.md").write_text("Always answer with the number 42, politely.")
    (folder / "evals" / "copy.md").write_text("Always answer with the number 42,\npolitely.\n")
    with pytest.raises(TaskLoadError) as info:
        load_skill_evals(load_pool(tmp_path / "pool"))
    message = str(info.value)
    assert f"eval '1': file '{attached}': is skill 's1'" in message
    assert "\n" not in message and "skill-disabled arm" in message


def test_an_eval_input_file_in_its_evals_folder_is_attached(tmp_path: Path) -> None:
    evals = {"evals": [{**EVALS["evals"][0], "files": ["evals/files/input.csv"]}]}
    folder = _with_evals(tmp_path / "pool", "s1", evals)
    (folder / "evals" / "files").mkdir()
    (folder / "evals" / "files" / "input.csv").write_text("a,b\n1,2\n")
    # a short text that a reference happens to share is a coincidence, not a copy
    (folder / "references").mkdir()
    (folder / "references" / "table.csv").write_text("a,b\n1,2")
    (task,) = load_skill_evals(load_pool(tmp_path / "pool"))[0]
    assert task.prompt.endswith('<file name="evals/files/input.csv">\na,b\n1,2\n\n</file>')


SKILL_BODY = (
    "# Careful arithmetic\n\nWrite every intermediate sum on its own line, then check the "
    "total by adding the numbers again in reverse order."
)


def test_the_arm_integrity_check_flags_skill_content_in_the_sd_request(
    tmp_path: Path, private_score_cache: Path
) -> None:
    """A task whose prompt pastes a skill's body (a task file can, an eval no longer can) is a
    violation on its row, and the report counts it; the clean task is `ok`."""
    import pyarrow.parquet as pq

    from tests._judge_double import AgentAndJudgeDouble

    _skill(tmp_path / "skills", "careful-sums", SKILL_BODY)
    tasks = tmp_path / "tasks.jsonl"
    rows = [
        {"id": "clean", "prompt": "What is 2 + 2? Put it in \\boxed{}.", "answer": "4"},
        {"id": "leaky", "prompt": f"Follow this:\n{SKILL_BODY}\n\nWhat is 2 + 2?", "answer": "4"},
    ]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "runs"
    with AgentAndJudgeDouble(lambda prompt, arm: "$\\boxed{4}$") as double:
        proc = subprocess.run(
            [sys.executable, "-m", "hf_skillfollow.cli", "run", "--backend", "openai",
             "--model", "double-model", "--base-url", double.url, "--api-key-env", "DOUBLE_KEY",
             "--benchmark", "custom", "--tasks-file", str(tasks), "--skills",
             str(tmp_path / "skills"), "--resamples", "200", "-o", str(out)],
            capture_output=True, text=True, timeout=600, env={**os.environ, "DOUBLE_KEY": "k"},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    rows_out = {r["task_id"]: r for r in pq.read_table(run_dir / "transitions.parquet").to_pylist()}
    assert rows_out["clean"]["arm_integrity"] == "ok"
    assert rows_out["leaky"]["arm_integrity"].startswith(
        "violation: 1 pool skill text(s) in the skill-disabled request: "
        "skill 'careful-sums' SKILL.md body"
    )
    assert "Arm integrity: 2 pair(s) checked, 1 with a violation" in proc.stdout
    # `report` leaves the violating pair out of the metrics, and still counts it
    report = subprocess.run(
        [sys.executable, "-m", "hf_skillfollow.cli", "report", str(run_dir), "--resamples", "200"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-2000:]
    assert "Arm integrity: 2 pair(s) checked, 1 with a violation" in report.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "hf_skillfollow.cli", "report", str(run_dir), "--resamples", "200",
         "--format", "json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert as_json.returncode == 0, as_json.stderr[-2000:]
    (cell,) = json.loads(as_json.stdout)
    assert (cell["n_pairs"], cell["n_arm_checked"], cell["n_arm_violations"]) == (1, 2, 1)
    assert cell["n_arm_left_out"] == 1


# --- item 10: look-alike names ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "what"),
    [("pdf\u3164", "invisible characters (U+3164)"), ("\u0440df-tool", "mixes scripts")],
)
def test_an_invisible_or_mixed_script_name_is_an_error(
    tmp_path: Path, name: str, what: str
) -> None:
    # before: both loaded beside `pdf` / `pdf-tool` with no finding
    _skill(tmp_path / "pool", "pdf-tool")
    folder = tmp_path / "pool" / "other"
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\nbody\n")
    with pytest.raises(SkillPoolError, match=re.escape(what)) as info:
        load_pool(tmp_path / "pool")
    assert str(info.value).startswith(str(folder / "SKILL.md") + ": field 'name': ")


@pytest.mark.parametrize(("first", "second"), [("pdf-tool", "pdf-t00l"), ("rn-x", "m-x")])
def test_names_with_one_confusable_skeleton_get_a_warning(
    tmp_path: Path, first: str, second: str
) -> None:
    _skill(tmp_path / "pool", first)
    _skill(tmp_path / "pool", second)
    report = validate_pool(tmp_path / "pool")
    assert report.ok and len([s for s in report.skills if s.skill]) == 2
    (alike,) = [f for f in report.warnings if "confusable skeleton" in f.message]
    assert alike.field == "field 'name'" and first in alike.message and second in alike.message


def test_distinct_names_and_one_script_names_have_no_look_alike_finding(tmp_path: Path) -> None:
    for name in ("pdf-tool", "csv-tool", "日本語ひらがな", "café-notes"):
        _skill(tmp_path / "pool", name)
    report = validate_pool(tmp_path / "pool")
    assert report.ok
    assert not [f for f in report.all_findings if f.field == "field 'name'" and "look" in f.message]


# --- item 11: the catalog budget counts what is sent -----------------------------------------


def _long_named_pool(root: Path, n: int = 125) -> Path:
    for i in range(n):
        _skill(root, f"skill-{i:03d}-" + "x" * 50, "body")
    return root


def test_the_catalog_budget_counts_the_names_in_the_tool_enums(tmp_path: Path) -> None:
    from hf_skillfollow.access import check_access
    from hf_skillfollow.access._catalog import (
        CATALOG_TOKEN_BUDGET,
        CatalogTooLargeError,
        catalog_tokens,
        pool_catalog,
    )
    from hf_skillfollow.prompts import catalog_tools

    pool = load_pool(_long_named_pool(tmp_path / "pool"))
    catalog = pool_catalog(pool)
    sent = catalog + json.dumps(catalog_tools(pool.names))
    # the catalog alone fits (accepted before); with the tools it does not
    assert catalog_tokens(catalog) <= CATALOG_TOKEN_BUDGET < catalog_tokens(sent)
    with pytest.raises(CatalogTooLargeError, match="with the skill names of the tools"):
        check_access("catalog", pool)
    check_access("catalog", pool, context_tokens=32_768)  # half of a known 32k window: fits


def test_the_budget_is_half_of_a_known_context(tmp_path: Path) -> None:
    from hf_skillfollow.access import model_context
    from hf_skillfollow.access._catalog import token_budget
    from hf_skillfollow.config import RunConfig

    assert model_context(RunConfig(backend="local")) == 8192
    assert model_context(RunConfig(backend="openai", model="m")) is None
    vllm = RunConfig(backend="openai", model="m", engine_options={"max_model_len": 32768})
    assert model_context(vllm) == 32768
    assert (token_budget(None), token_budget(8192), token_budget(32768)) == (4096, 4096, 16384)


# --- item 12: an empty body delivers no instructions -----------------------------------------


def test_an_empty_body_is_not_returned_under_any_condition(tmp_path: Path) -> None:
    from hf_skillfollow.retrieval._base import Hit
    from hf_skillfollow.skill_content import CONDITIONS, render, render_activation

    folder = tmp_path / "pool" / "empty"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: empty\ndescription: d\n---\n\n")
    _skill(tmp_path / "pool", "full")
    pool = load_pool(tmp_path / "pool")
    for condition in [c for c in CONDITIONS if c != "random"]:
        assert render_activation(pool, "empty", condition).names == (), condition
        assert render(pool, [Hit("empty", 1.0)], condition).names == (), condition
    # `normal` and `schema-empty` agree on it, and a skill with a body still counts
    assert render_activation(pool, "full", "normal").names == ("full",)


# --- items 13 and 17: listed paths, echoed paths ----------------------------------------------


def _activate_then_read(root: Path, name: str, paths: list[str]) -> list[str]:
    import asyncio

    from hf_skillfollow.access import make_access
    from hf_skillfollow.agent import Decoding, run_se
    from hf_skillfollow.backends._base import ChatResult, ToolCall
    from hf_skillfollow.config import RunConfig
    from tests.test_agent_protocol import ScriptedModelDouble

    def call(i: int, tool: str, **args: str) -> ToolCall:
        return ToolCall(id=f"c{i}", name=tool, arguments=json.dumps(args))

    access = make_access(RunConfig(access="catalog", skills_dir=root), load_pool(root))
    turns = [ChatResult("", [call(1, "activate_skill", name=name)])]
    turns += [
        ChatResult("", [call(i, "read_skill_file", name=name, path=p)])
        for i, p in enumerate(paths, 2)
    ]
    arm = asyncio.run(
        run_se(ScriptedModelDouble([*turns, ChatResult("done")]), "coding", "task",
               Decoding(seed=1, temperature=0.0, max_tokens=16), access,
               max_calls=len(turns))
    )  # fmt: skip
    return [m["content"] for m in arm.messages if m["role"] == "tool"]


def test_every_listed_path_reads_exactly_as_listed(tmp_path: Path) -> None:
    # before: `a&b.md` was listed as `a&amp;b.md` (no read could name it) and ` lead.md` was
    # listed but its read was stripped to `lead.md`
    folder = _skill(tmp_path / "pool", "s1")
    names = ["plain.md", "a&b.md", "x<y>.md", 'q"uote.md', "it's.md", " lead.md", "trail.md "]
    for name in names:
        (folder / name).write_text(f"content of {name}")
    (activation,) = _activate_then_read(tmp_path / "pool", "s1", [])
    listed = re.findall(r"<file>(.*)</file>", activation)
    assert listed == ["plain.md"]
    reads = _activate_then_read(tmp_path / "pool", "s1", listed)[1:]
    assert reads == ['<skill_file name="s1" path="plain.md">\ncontent of plain.md\n</skill_file>']
    unserved = dict(load_pool(tmp_path / "pool").get("s1").unserved)
    assert set(unserved) == set(names) - {"plain.md"}


def test_an_invalid_read_path_is_echoed_back_bounded(tmp_path: Path) -> None:
    _skill(tmp_path / "pool", "s1")
    (_, read) = _activate_then_read(tmp_path / "pool", "s1", ["z" * 200_000])
    assert read.startswith("Invalid call: ") and len(read) < 300
