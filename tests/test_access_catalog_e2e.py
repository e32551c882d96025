"""Both access protocols end to end: run, report, push and the Space, with known outcomes.

`SkillToolsModelServerDouble` is an OpenAI-compatible HTTP server standing in for the model
provider (a real model's calls and answers cannot be known in advance). It decides from a
hash of the task id whether the SE arm calls a skill tool, which skill it activates (or
searches for) and whether it reads a file the activation listed, and answers right or wrong
by `tests._model_double.scripted_answer`. Everything on the toolkit's side is real: the
`run` command over HTTP through the openai backend, the skill pool read from folders in the
Agent Skills shapes, MATH-500 scoring, `report`, `push` (to `RecordingHfApiDouble`, the
`HfApi` stand-in, because huggingface.co is unreachable) and the leaderboard Space in its own
process. Every expected count is worked out below from the double's script, never by the
code under test. The last test runs `--access catalog` on the real embedded model; on real
vLLM it runs in tests/test_vllm.py (one engine for a search and a catalog cell).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli as main_cli
from hf_skillfollow.tasks import Task, load_tasks
from tests._http_double import ChatServerDouble, Reply
from tests._model_double import scripted_answer
from tests.test_access_catalog import ALPHA_BODY, PROOF, write_skill

N_TASKS = 8
ALPHA = ("alpha-search", "Binary search over a sorted list.")
BETA = ("beta-count", "Count items with a dictionary.")


def _h(kind: str, task_id: str) -> int:
    return int(hashlib.sha256(f"{kind}:{task_id}".encode()).hexdigest(), 16)


def calls_a_tool(task_id: str) -> bool:
    return _h("call", task_id) % 2 == 0


def target(task_id: str) -> tuple[str, str]:
    """The skill the double activates (or searches by its description) on a calling task."""
    return ALPHA if _h("skill", task_id) % 2 == 0 else BETA


def se_right(task_id: str) -> bool:
    return _h("se", task_id) % 4 != 0  # the bucket of scripted_answer


def sd_right(task_id: str) -> bool:
    return _h("sd", task_id) % 4 != 0


class SkillToolsModelServerDouble(ChatServerDouble):
    """A model provider double that uses whichever skill tools the request offers.

    SE turn 1 on a calling task: `activate_skill(target)` or `search_skills(description of
    target)`; turn 2 after an activation that listed files: `read_skill_file` of the first
    one; then the scripted answer. SD (no tools) answers at once. Request bodies are kept.
    """

    def __init__(self, tasks: list[Task]) -> None:
        super().__init__()
        self.by_prompt = {t.prompt: t for t in tasks}
        self.bodies: list[dict] = []
        self._lock = threading.Lock()

    def answer(self, raw: bytes) -> Reply:
        body = json.loads(raw or b"{}")
        with self._lock:
            self.bodies.append(body)
        return Reply(body=self.reply(body))

    def reply(self, body: dict) -> dict:
        messages = body.get("messages", [])
        prompt = next(m["content"] for m in messages if m.get("role") == "user")
        task = self.by_prompt[prompt]
        tools, results, emulated = _offered(body)
        call = None
        if tools and body.get("tool_choice") != "none" and calls_a_tool(task.task_id):
            name, description = target(task.task_id)
            if "search_skills" in tools and not results:
                call = ("search_skills", {"query": description})
            elif "activate_skill" in tools and not results:
                call = ("activate_skill", {"name": name})
            elif "read_skill_file" in tools and len(results) == 1 and "<file>" in results[0]:
                path = results[0].split("<file>", 1)[1].split("</file>", 1)[0]
                call = ("read_skill_file", {"name": name, "path": path})
        message: dict = {"role": "assistant", "content": ""}
        if call and emulated:  # the text protocol of tool_mode=emulated
            message["content"] = (
                "<tool_call>" + json.dumps({"name": call[0], "arguments": call[1]}) + "</tool_call>"
            )
            call = None
        elif call:
            message["tool_calls"] = [{"id": f"call_{len(results)}", "type": "function",
                                      "function": {"name": call[0], "arguments": json.dumps(call[1])}}]  # fmt: skip
        else:
            message["content"] = scripted_answer(task, "se" if tools else "sd")
        return {
            "id": "chatcmpl-double", "object": "chat.completion", "created": 0, "model": "double-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }  # fmt: skip


def _offered(body: dict) -> tuple[set[str], list[str], bool]:
    """(tool names offered, earlier tool results, whether the tools came as emulated text)."""
    messages = body.get("messages", [])
    if body.get("tools"):
        results = [m.get("content") or "" for m in messages if m.get("role") == "tool"]
        return {t["function"]["name"] for t in body["tools"]}, results, False
    system = messages[0].get("content") or "" if messages else ""
    names = {
        n for n in ("search_skills", "activate_skill", "read_skill_file") if f"- {n}: " in system
    }
    results = [
        (m.get("content") or "")
        .removeprefix("<tool_response>\n")
        .removesuffix("\n</tool_response>")
        for m in messages
        if m.get("role") == "user" and (m.get("content") or "").startswith("<tool_response>")
    ]
    return names, results, bool(names)


def cli(*args: str):
    return CliRunner().invoke(main_cli, list(args), catch_exceptions=False)


def _pool(root: Path) -> Path:
    pool = root / "library"
    write_skill(pool, *ALPHA, ALPHA_BODY, {"references/proof.md": PROOF})
    write_skill(pool, *BETA, "# Beta\n\nCount with a dictionary; return the maximum count.", {})
    return pool


def _run(out: Path, url: str, pool: Path, tasks_file: Path, access: str, *extra: str) -> Path:
    proc = cli("run", "--backend", "openai", "--model", "double-model", "--base-url", url,
               "--benchmark", "math500", "--tasks-file", str(tasks_file), "--partition-size",
               str(N_TASKS), "--skills", str(pool), "--access", access, "--top-k", "2",
               "-o", str(out), "--resamples", "200", *extra)  # fmt: skip
    assert proc.exit_code == 0, proc.output[-3000:]
    note = "note: --top-k is ignored with --access catalog"
    assert (note in proc.output) == (access == "catalog")
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_dir):
    """One catalog and one search run of the same 8 MATH-500 tasks, library and double."""
    root = tmp_path_factory.mktemp("access")
    tasks_file = data_dir / "math500.jsonl"
    tasks, _ = load_tasks("math500", tasks_file)
    pool = _pool(root)
    with SkillToolsModelServerDouble(tasks) as double:
        catalog = _run(root / "catalog", double.url, pool, tasks_file, "catalog")
        catalog_bodies = list(double.bodies)
        double.bodies.clear()
        search = _run(root / "search", double.url, pool, tasks_file, "search")
        search_bodies = list(double.bodies)
        double.bodies.clear()
        emulated = _run(root / "emulated", double.url, pool, tasks_file, "catalog",
                        "--tool-mode", "emulated")  # fmt: skip
        emulated_bodies = list(double.bodies)
    return {"catalog": catalog, "search": search, "emulated": emulated, "root": root,
            "bodies": {"catalog": catalog_bodies, "search": search_bodies,
                       "emulated": emulated_bodies}}  # fmt: skip


def _rows(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "transitions.parquet").to_pylist()


def _expected(task_ids: list[str]) -> dict[str, int]:
    """The 2x2 counts of the double's script over S_call (= the calling tasks) and all tasks."""
    out = dict.fromkeys(["a_all", "b_all", "c_all", "d_all", "a_cond", "b_cond", "c_cond",
                         "d_cond"], 0)  # fmt: skip
    for t in task_ids:
        kind = {(True, True): "a", (True, False): "b", (False, True): "c", (False, False): "d"}[
            (se_right(t), sd_right(t))
        ]
        out[f"{kind}_all"] += 1
        if calls_a_tool(t):
            out[f"{kind}_cond"] += 1
    out["n_pairs"], out["n_cond"] = len(task_ids), sum(map(calls_a_tool, task_ids))
    return out


@pytest.mark.parametrize("mode", ["catalog", "emulated"])
def test_catalog_run_records_exactly_the_scripted_activations(runs, mode) -> None:
    rows = {r["task_id"]: r for r in _rows(runs[mode])}
    assert len(rows) == N_TASKS and {r["access"] for r in rows.values()} == {"catalog"}
    assert {r["tool_mode"] for r in rows.values()} == {
        "native" if mode == "catalog" else "emulated"
    }
    for t, r in rows.items():
        name = target(t)[0]
        reads = calls_a_tool(t) and name == "alpha-search"
        assert r["se_correct"] == se_right(t) and r["sd_correct"] == sd_right(t)
        assert r["invoked"] == r["returned"] == calls_a_tool(t)
        assert r["skills_returned"] == ([name] if calls_a_tool(t) else [])
        assert r["n_calls"] == (0 if not calls_a_tool(t) else 2 if reads else 1)
        assert r["queries"] == (
            [] if not calls_a_tool(t)
            else [f"activate_skill({name})"] + (
                ["read_skill_file(alpha-search, references/proof.md)"] if reads else [])
        )  # fmt: skip
    # the script has tasks of every kind in this partition, or the checks above prove little
    assert {calls_a_tool(t) for t in rows} == {True, False}
    assert {target(t)[0] for t in rows if calls_a_tool(t)} == {"alpha-search", "beta-count"}


def test_catalog_traces_hold_the_activation_and_the_file(runs) -> None:
    traces = pq.read_table(runs["catalog"] / "traces.parquet").to_pylist()
    reading = next(
        t for t in traces
        if t["arm"] == "se" and calls_a_tool(t["task_id"]) and target(t["task_id"]) == ALPHA
    )  # fmt: skip
    tool_texts = [m["content"] for m in reading["messages"] if m["role"] == "tool"]
    assert tool_texts == [
        f'<skill_content name="alpha-search">\n{ALPHA_BODY}\n\n<skill_resources>\n'
        "  <file>references/proof.md</file>\n</skill_resources>\n</skill_content>",
        f'<skill_file name="alpha-search" path="references/proof.md">\n{PROOF}\n</skill_file>',
    ]
    assert str(runs["root"]) not in json.dumps(traces, default=str)  # no local path published


def test_request_bytes_show_catalog_and_enum_in_se_and_neither_in_sd(runs) -> None:
    bodies = runs["bodies"]["catalog"]
    se = [b for b in bodies if b.get("tools")]
    sd = [b for b in bodies if not b.get("tools")]
    assert len(sd) == N_TASKS and len(se) >= N_TASKS
    for body in se:
        system = body["messages"][0]["content"]
        assert "<available_skills>" in system and ALPHA[1] in system and BETA[1] in system
        assert [t["function"]["name"] for t in body["tools"]] == [
            "activate_skill",
            "read_skill_file",
        ]
        for tool in body["tools"]:
            enum = tool["function"]["parameters"]["properties"]["name"]["enum"]
            assert enum == ["alpha-search", "beta-count"]
    for body in sd:
        raw = json.dumps(body)
        assert "available_skills" not in raw and ALPHA[1] not in raw and "enum" not in raw
        assert "activate_skill" not in raw and "tools" not in body
    # SD's system prompt is the same whatever the protocol
    search_sd = [b for b in runs["bodies"]["search"] if not b.get("tools")]
    assert {b["messages"][0]["content"] for b in sd} == {
        b["messages"][0]["content"] for b in search_sd
    }


def test_emulated_catalog_describes_both_tools_in_text_and_sd_has_neither(runs) -> None:
    bodies = runs["bodies"]["emulated"]
    assert not any(b.get("tools") for b in bodies)  # emulated: nothing native
    se = [b for b in bodies if "<available_skills>" in b["messages"][0]["content"]]
    sd = [b for b in bodies if "<available_skills>" not in b["messages"][0]["content"]]
    assert len(sd) == N_TASKS and len(se) >= N_TASKS
    system = se[0]["messages"][0]["content"]
    assert "- activate_skill: " in system and "- read_skill_file: " in system
    assert '"enum": ["alpha-search", "beta-count"]' in system
    assert all("activate_skill" not in b["messages"][0]["content"] for b in sd)


def test_search_run_sends_listing_1_and_records_the_searches(runs) -> None:
    se = [b for b in runs["bodies"]["search"] if b.get("tools")]
    (tool,) = se[0]["tools"]
    assert tool["function"]["description"].startswith(
        "Search the skill library for reusable problem-solving artifacts. Returns utility functions"
    )
    assert all("<available_skills>" not in b["messages"][0]["content"] for b in se)
    rows = {r["task_id"]: r for r in _rows(runs["search"])}
    assert {r["access"] for r in rows.values()} == {"search"}
    for t, r in rows.items():
        assert r["queries"] == ([target(t)[1]] if calls_a_tool(t) else [])
        assert r["returned"] == calls_a_tool(t) and r["n_calls"] == int(calls_a_tool(t))
        if calls_a_tool(t):
            assert r["skills_returned"][0] == target(t)[0]  # BM25 ranks the described skill first


def test_annotator_sees_the_activated_skills_as_retrieved_ones(runs) -> None:
    from hf_skillfollow.annotate._units import load_units

    units = {u.task_id: u for u in load_units([runs["catalog"]], everything=True)}
    rows = {r["task_id"]: r for r in _rows(runs["catalog"])}
    assert set(units) == {t for t in rows if calls_a_tool(t)}  # S_call: the activated tasks
    for t, unit in units.items():
        name = target(t)[0]
        assert unit.view.skill_names == (name,)
        assert unit.view.queries == tuple(rows[t]["queries"])
        assert unit.view.tool_results[0].startswith(f'<skill_content name="{name}">')


def test_verify_rescores_the_catalog_run_and_agrees(runs, tmp_path) -> None:
    proc = cli("verify", str(runs["catalog"]), "--no-record", "--format", "json", "--state",
               str(tmp_path / "state.jsonl"))  # fmt: skip
    assert proc.exit_code == 0, proc.output[-3000:]
    data = json.loads(proc.stdout)
    assert data["rows_checked"] == data["rows_agreeing"] == N_TASKS
    assert data["disagreements"] == []


def test_an_interrupted_catalog_run_resumes_without_redoing_and_keeps_its_protocol(
    runs, tmp_path, data_dir
) -> None:
    import shutil

    run_dir = tmp_path / runs["catalog"].name
    shutil.copytree(runs["catalog"], run_dir)
    lines = (run_dir / "records.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "records.jsonl").write_text("".join(lines[:3]))  # 3 of 8 pairs finished
    tasks, _ = load_tasks("math500", data_dir / "math500.jsonl")
    with SkillToolsModelServerDouble(tasks) as double:
        refused = cli("run", "--resume", str(run_dir), "--access", "search")
        assert refused.exit_code != 0 and "--access 'search' (run: 'catalog')" in refused.output
        proc = cli("run", "--resume", str(run_dir), "--base-url", double.url, "--no-report")
        assert proc.exit_code == 0, proc.output[-3000:]
        by_prompt = {t.prompt: t.task_id for t in tasks}
        asked = {by_prompt[b["messages"][1]["content"]] for b in double.bodies}
    after = (run_dir / "records.jsonl").read_text().splitlines(keepends=True)
    assert after[:3] == lines[:3] and len(after) == N_TASKS  # kept, not redone, none twice
    done = {json.loads(line)["task_id"] for line in lines[:3]}
    assert len(asked) == N_TASKS - 3 and all(t not in asked for t in done)
    rows = {r["task_id"]: r for r in _rows(run_dir)}
    assert rows == {r["task_id"]: r for r in _rows(runs["catalog"])}  # the same outcomes


def _report(*sources: Path) -> list[dict]:
    proc = cli("report", *map(str, sources), "--format", "json", "--resamples", "200",
               "--min-cond", "1")  # fmt: skip
    assert proc.exit_code == 0, proc.output[-3000:]
    return json.loads(proc.stdout)


def test_report_counts_the_catalog_cell_exactly_and_never_pools_protocols(runs) -> None:
    cells = _report(runs["catalog"], runs["search"])
    assert sorted(c["access"] for c in cells) == ["catalog", "search"]
    catalog = next(c for c in cells if c["access"] == "catalog")
    expected = _expected([r["task_id"] for r in _rows(runs["catalog"])])
    assert {k: catalog[k] for k in expected} == expected
    assert catalog["cell_id"] != next(c for c in cells if c["access"] == "search")["cell_id"]


@pytest.fixture(scope="module")
def pushed(runs, tmp_path_factory):
    """Both runs pushed through `push_runs` to the HfApi double, the repo written to a folder."""
    from hf_skillfollow.hub import push_runs
    from tests.test_hub_push_double import RecordingHfApiDouble

    tmp = tmp_path_factory.mktemp("pushed")
    api = RecordingHfApiDouble(tmp)
    push_runs([runs["catalog"], runs["search"]], "org/access-test", api=api)
    folder = tmp / "repo"
    for name, data in api.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def test_push_publishes_the_access_column_and_the_card_shows_it(runs, pushed) -> None:
    run_id = runs["catalog"].name
    table = pq.read_table(pushed / "data" / "transitions" / f"{run_id}.parquet")
    assert set(table.column("access").to_pylist()) == {"catalog"}
    assert table.num_rows == N_TASKS
    card = (pushed / "README.md").read_text()
    assert "| prompts_hash | access | tool |" in card
    assert "| catalog | `activate_skill(name: <skill names of the pool>)` |" in card
    assert (
        "| search | `search_skills(query: string, types?: array<utility\\|procedure\\|guard>)` |"
        in card
    )
    # the cells table alone (the cost table below it lists the same cells again)
    cells = card.split("## Cells", 1)[1].split("### Cost per task", 1)[0]
    pools = [line for line in cells.splitlines() if "| library / normal" in line]
    assert len(pools) == 2 and sum("library / normal / catalog" in line for line in pools) == 1
    # the report over the published repo gives the same catalog counts as over the run
    (catalog,) = [c for c in _report(pushed) if c["access"] == "catalog"]
    expected = _expected([r["task_id"] for r in _rows(runs["catalog"])])
    assert {k: catalog[k] for k in expected} == expected


def test_space_shows_the_catalog_cell_apart_with_exact_counts(runs, pushed, tmp_path) -> None:
    from gradio_client import Client

    from tests.test_verify import _start_leaderboard

    proc, url = _start_leaderboard(pushed, tmp_path)
    try:
        client = Client(url, verbose=False)
        cells = client.predict([], [], [], "", "5", ["non-reportable cells"], "rae:desc",
                               api_name="/cells")  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert sorted(c["access"] for c in cells) == ["catalog", "search"]
    catalog = next(c for c in cells if c["access"] == "catalog")
    expected = _expected([r["task_id"] for r in _rows(runs["catalog"])])
    assert {k: catalog[k] for k in expected} == expected
    assert " · library / normal / catalog · " in catalog["label"]


@pytest.mark.slow
def test_catalog_run_on_the_embedded_model(tmp_path: Path, data_dir: Path) -> None:
    """`--access catalog` on SmolLM2-135M (llama.cpp over HTTP), forced first activation."""
    out = tmp_path / "runs"
    pool = _pool(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "hf_skillfollow.cli", "run", "--tasks-file",
         str(data_dir / "mbppplus-v0.1.0.jsonl"), "--limit", "2", "--skills", str(pool),
         "--access", "catalog", "--retrieval-policy", "forced", "--max-tokens", "48",
         "--concurrency", "1", "--resamples", "200", "-o", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    rows = _rows(run_dir)
    assert len(rows) == 2 and {r["access"] for r in rows} == {"catalog"}
    # forced: the first SE turn is an activation of a pool skill (the grammar holds the enum)
    assert all(r["invoked"] and r["returned"] for r in rows)
    assert all(r["skills_returned"][0] in ("alpha-search", "beta-count") for r in rows)
    traces = pq.read_table(run_dir / "traces.parquet").to_pylist()
    for t in traces:
        system = t["messages"][0]["content"]
        assert ("<available_skills>" in system) == (t["arm"] == "se")
    assert "RAE" in proc.stdout
