"""`hf-skillfollow annotate` against a scripted annotator behind a real local HTTP server.

The annotator model is `ScriptedAnnotatorDouble` (tests/_annotation_fixtures.py): a test
double, because no real model returns a chosen label or chosen invalid output on demand.
Everything else is real: the CLI, the `openai` backend and its HTTP client, the run
directory, the store and the parquet table. The real embedded model is exercised by the
slow test at the end.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hf_skillfollow.annotate._labels import LABEL_SCHEMA, LABELS, parse_label
from hf_skillfollow.annotate._request import BlindedView, build_request, request_json
from hf_skillfollow.cli import cli
from hf_skillfollow.schema import ANNOTATIONS_SCHEMA
from tests._annotation_fixtures import (
    SD_SECRET,
    ScriptedAnnotatorDouble,
    flips,
    label_json,
    se_answer,
    write_annotation_run,
)

HELPFUL = ["Mbpp/2", "Mbpp/3", "Mbpp/4"]  # S_call b in the fixture
HARMFUL = ["Mbpp/5", "Mbpp/6"]  # S_call c
SCRIPT = {
    "Mbpp/2": [label_json("appropriate adherence")],
    "Mbpp/3": [label_json("appropriate adherence")],
    "Mbpp/4": [label_json("ignored/independent")],
    "Mbpp/5": [label_json("misapplied/overapplied")],
    "Mbpp/6": [label_json("format/interface failure")],
    "Mbpp/7": [label_json("appropriate adherence")],
    "Mbpp/8": [label_json("unclear")],
}


def _annotate(server: ScriptedAnnotatorDouble, *args: str):
    result = CliRunner().invoke(
        cli,
        ["annotate", *args, "--backend", "openai", "--base-url", server.url, "--model", "annotator-double"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return result


def _rows(run_dir: Path) -> dict[str, dict]:
    table = pq.read_table(run_dir / "annotations.parquet")
    assert table.schema.equals(ANNOTATIONS_SCHEMA, check_metadata=False)
    return {r["task_id"]: r for r in table.to_pylist()}


def test_scripted_annotator_double_labels_the_flips_only(tmp_path: Path) -> None:
    run_dir = write_annotation_run(tmp_path)
    assert flips(run_dir) == dict.fromkeys(HELPFUL, "helpful") | dict.fromkeys(HARMFUL, "harmful")
    with ScriptedAnnotatorDouble(SCRIPT) as server:
        out = _annotate(server, str(run_dir))
    rows = _rows(run_dir)
    assert sorted(rows) == sorted(HELPFUL + HARMFUL)  # concordant and skip tasks left out
    assert {t: r["label"] for t, r in rows.items()} == {
        t: json.loads(SCRIPT[t][0])["label"] for t in rows
    }
    assert {t: r["flip"] for t, r in rows.items()} == flips(run_dir)
    assert all(r["attempts"] == 1 and r["failure"] is None for r in rows.values())
    assert all(r["annotator"] == f"annotator-double@{r['prompt_hash']}" for r in rows.values())
    assert "helpful: 3 · appropriate adherence 2 · ignored/independent 1" in out.output
    assert len(server.bodies) == 5


def test_scripted_annotator_double_all_adds_concordant_units(tmp_path: Path) -> None:
    run_dir = write_annotation_run(tmp_path)
    with ScriptedAnnotatorDouble(SCRIPT) as server:
        _annotate(server, str(run_dir), "--all")
    rows = _rows(run_dir)
    assert sorted(rows) == sorted(SCRIPT)  # every S_call task, no skip task (Mbpp/9, Mbpp/10)
    assert rows["Mbpp/7"]["flip"] == "concordant" and rows["Mbpp/8"]["label"] == "unclear"


def test_scripted_annotator_double_invalid_output_is_retried_then_recorded_as_failure(
    tmp_path: Path,
) -> None:
    run_dir = write_annotation_run(tmp_path)
    script = dict(SCRIPT)
    # Not JSON, then a near-miss label, then valid: labelled on the third attempt.
    script["Mbpp/2"] = ["not json", label_json("Appropriate Adherence"), label_json("unclear")]
    # Always an extra key: never labelled, recorded as a failure with every reason.
    script["Mbpp/5"] = [json.dumps({"label": "unclear", "rationale": "x", "confidence": 1})]
    with ScriptedAnnotatorDouble(script) as server:
        out = _annotate(server, str(run_dir), "--max-attempts", "3")
        seeds = [b["seed"] for b in server.bodies if "Solve Mbpp/2" in json.dumps(b)]
    rows = _rows(run_dir)
    assert rows["Mbpp/2"]["label"] == "unclear" and rows["Mbpp/2"]["attempts"] == 3
    assert seeds == [0, 1, 2]  # each retry asks with the next seed
    failed = rows["Mbpp/5"]
    assert failed["label"] is None and failed["rationale"] is None and failed["attempts"] == 3
    assert failed["failure"].count("invalid output") == 3 and "confidence" in failed["failure"]
    assert "harmful: 2 · format/interface failure 1 · failed 1" in out.output


def test_scripted_annotator_double_resume_skips_done_and_retry_failed_redoes_failures(
    tmp_path: Path,
) -> None:
    run_dir = write_annotation_run(tmp_path)
    script = dict(SCRIPT) | {"Mbpp/6": ["{broken"]}
    with ScriptedAnnotatorDouble(script) as server:
        _annotate(server, str(run_dir), "--max-attempts", "1")
        assert len(server.bodies) == 5
        again = _annotate(server, str(run_dir), "--max-attempts", "1")
        assert len(server.bodies) == 5  # nothing redone
        assert "5 already annotated" in again.output
    script["Mbpp/6"] = [label_json("misapplied/overapplied")]
    with ScriptedAnnotatorDouble(script) as server:
        _annotate(server, str(run_dir), "--retry-failed")
        assert len(server.bodies) == 1  # only the failure
    rows = _rows(run_dir)
    assert len(rows) == 5 and rows["Mbpp/6"]["label"] == "misapplied/overapplied"
    lines = (run_dir / "annotations.jsonl").read_text().splitlines()
    assert len(lines) == 6  # the failure stays in the log; the table keeps the latest row


def test_torn_last_line_is_dropped_on_resume(tmp_path: Path) -> None:
    run_dir = write_annotation_run(tmp_path)
    with ScriptedAnnotatorDouble(SCRIPT) as server:
        _annotate(server, str(run_dir))
        log = run_dir / "annotations.jsonl"
        lines = log.read_text().splitlines(keepends=True)
        log.write_text("".join(lines[:-1]) + lines[-1][:20])  # crash mid-write of the last unit
        _annotate(server, str(run_dir))
        assert len(server.bodies) == 6  # only the torn unit was asked again
    assert len(_rows(run_dir)) == 5


def test_scripted_annotator_double_request_bytes_are_blinded(tmp_path: Path) -> None:
    run_dir = write_annotation_run(tmp_path)
    with ScriptedAnnotatorDouble(SCRIPT) as server:
        _annotate(server, str(run_dir))
    assert len(server.raw) == 5
    for raw, body in zip(server.raw, server.bodies, strict=True):
        text = raw.decode()
        task = next(t for t in SCRIPT if f"Solve {t}\\n" in text or f"Solve {t}" in text)
        assert SD_SECRET not in text  # no SD answer
        for leak in (
            "VERDICT-",
            "se_correct",
            "sd_correct",
            "scorer_details",
            "helpful",
            "harmful",
            "flip",
        ):
            assert leak not in text, leak  # no correctness label or transition type
        user = body["messages"][1]["content"]
        assert se_answer(task) in user and "query" in user and "prefix-sum" in user
        assert f"Use prefix sums for {task}." in user
        assert body["tool_choice"] == {
            "type": "function",
            "function": {"name": "record_annotation"},
        }
        assert body["tools"][0]["function"]["parameters"] == LABEL_SCHEMA
        assert body["tools"][0]["function"]["strict"] is True


def test_blinded_view_holds_only_the_allowed_fields() -> None:
    fields = {f.name for f in dataclasses.fields(BlindedView)}
    assert fields == {"task_prompt", "queries", "skill_names", "tool_results", "se_answer"}
    view = BlindedView("Solve t", ("q",), ("s",), ("r",), "answer")
    assert not hasattr(view, "__dict__")  # slots: no field can be added on the way
    assert build_request(view)["messages"][1]["content"].endswith("## Final answer\nanswer")


def test_requests_do_not_change_with_correctness_or_the_sd_answer(tmp_path: Path) -> None:
    """Two runs identical except every correctness value and every SD answer: same bytes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from hf_skillfollow.annotate._units import load_units

    first = write_annotation_run(tmp_path / "a")
    second = tmp_path / "b" / first.name
    second.mkdir(parents=True)
    t = pq.read_table(first / "transitions.parquet")
    for col in ("se_correct", "sd_correct"):
        t = t.set_column(t.schema.get_field_index(col), col, pc.invert(t.column(col)))
    pq.write_table(t, second / "transitions.parquet")
    traces = pq.read_table(first / "traces.parquet").to_pylist()
    for row in traces:
        row["correct"] = not row["correct"]
        row["scorer_details"] = "{}"
        if row["arm"] == "sd":
            row["final_answer"] = "a different SD answer"
    pq.write_table(
        pa.Table.from_pylist(traces, schema=pq.read_schema(first / "traces.parquet")),
        second / "traces.parquet",
    )
    a = {u.task_id: request_json(u.view) for u in load_units([first], everything=True)}
    b = {u.task_id: request_json(u.view) for u in load_units([second], everything=True)}
    assert len(a) == 7 and a == b


@pytest.mark.parametrize(
    "text",
    ["", "[]", '{"label": "Unclear", "rationale": "x"}', '{"label": "unclear"}',
     '{"label": "unclear", "rationale": 3}', '{"label": "unclear", "rationale": "x", "y": 1}'],
)  # fmt: skip
def test_parse_label_refuses_anything_but_an_exact_label(text: str) -> None:
    with pytest.raises(ValueError):
        parse_label(text)


def test_parse_label_accepts_each_label() -> None:
    for label in LABELS:
        assert parse_label(json.dumps({"label": label, "rationale": " r "})) == (label, "r")


def test_transitions_file_without_traces_is_refused_with_its_path(tmp_path: Path) -> None:
    run_dir = write_annotation_run(tmp_path)
    result = CliRunner().invoke(cli, ["annotate", str(run_dir / "transitions.parquet")])
    assert result.exit_code != 0
    assert "transitions.parquet: a transitions file has no traces" in result.output


@pytest.mark.slow
def test_embedded_model_returns_schema_valid_labels(tmp_path: Path) -> None:
    """The real embedded SmolLM2 through llama.cpp: the forced call is grammar-constrained to
    the label schema, so every reply must parse to one of the five labels."""
    run_dir = write_annotation_run(tmp_path)
    result = CliRunner().invoke(
        cli, ["annotate", str(run_dir), "--max-attempts", "2", "--concurrency", "1"]
    )
    assert result.exit_code == 0, result.output
    rows = _rows(run_dir)
    assert sorted(rows) == sorted(HELPFUL + HARMFUL)
    labelled = [r for r in rows.values() if r["label"] is not None]
    assert labelled, [r["failure"] for r in rows.values()]
    for r in labelled:
        assert r["label"] in LABELS and isinstance(r["rationale"], str)
        assert parse_label(r["raw_output"])[0] == r["label"]
        assert r["annotator_backend"] == "local"
