"""Issue 38: every sweep cell is one measurement.

A cell's key is the identity `run` gives the cell (its protocol, its data's bytes, its skill
pool's content, its seed) plus its endpoints, checked field by field over every `RunConfig`
field; `exclude` costs near-linear work; settings a sweep would silently ignore are refused.
Nothing here contacts a model: keys and plans come from the files alone.
"""

from __future__ import annotations

import shutil
import time
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.config import RUN_IDENTITY_FIELDS, RunConfig
from hf_skillfollow.sweep import SweepFileError, jobs_for, load
from hf_skillfollow.sweep._identity import NEUTRAL_FIELDS, CellIdentity

BASE = {"model": "org/m", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"}

#: Values that pass RunConfig's own checks where "another value of the type" would not.
SPECIAL = {
    "backend": "vllm-server", "benchmark": "humanevalplus", "retriever": "pyserini",
    "judge_backend": "openai", "base_url": "http://127.0.0.1:10/v1",
    "judge_base_url": "http://127.0.0.1:11/v1", "api_key_env": "OTHER_KEY",
    "judge_api_key_env": "OTHER_KEY",
}  # fmt: skip


def _other(name: str, current: Any, annotation: Any, tmp: Path) -> Any:
    """Another valid value of field `name` (derived from its type; files made under `tmp`)."""
    if name in SPECIAL:
        return SPECIAL[name]
    if name == "tasks_file":
        (tmp / "tasks.jsonl").write_text('{"task_id": "Mbpp/2"}\n')
        return tmp / "tasks.jsonl"
    if name == "skills_dir":
        from hf_skillfollow._resources import shipped_pool

        pool = tmp / "pool"
        shutil.copytree(shipped_pool("coding"), pool)
        return pool
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return next(v for v in typing.get_args(annotation) if v != current)
    optional = origin in (typing.Union, types.UnionType)
    kind = (
        [a for a in typing.get_args(annotation) if a is not type(None)][0]
        if optional
        else annotation
    )
    if typing.get_origin(kind) is dict:
        return {"x": 1}
    if kind is bool:
        return not current
    if kind is int:
        return (current or 7) + 1
    if kind is float:
        return current + 0.25
    if kind is str:
        return f"{current or ''}other"
    raise AssertionError(f"field {name}: no other value known for {annotation}; add one here")


def test_the_neutral_fields_are_exactly_these() -> None:
    """Written out by hand: a new run field must be declared neutral or it makes a cell."""
    assert {"concurrency", "request_timeout", "n_threads", "server_port",
                              "api_key_env", "judge_api_key_env", "repeats"} == NEUTRAL_FIELDS  # fmt: skip
    assert NEUTRAL_FIELDS <= RUN_IDENTITY_FIELDS


@pytest.mark.parametrize("name", sorted(RunConfig.model_fields))
def test_every_field_that_changes_a_cell_changes_its_key(name: str, tmp_path: Path) -> None:
    """Field by field over every RunConfig field (a field added later is checked too): the
    key changes exactly when the field is not one of how fast / with which key a cell runs.
    On main `tasks_file`, `base_url` and the judge's endpoint left the key unchanged."""
    identity = CellIdentity()
    base = RunConfig(**BASE)
    info = RunConfig.model_fields[name]
    changed = RunConfig(**{**base.model_dump(), name: _other(name, getattr(base, name),
                                                             info.annotation, tmp_path)})  # fmt: skip
    assert getattr(changed, name) != getattr(base, name)
    same = identity.key(changed) == identity.key(base)
    assert same == (name in NEUTRAL_FIELDS), name


def test_a_task_file_is_keyed_by_its_bytes_not_its_path(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"task_id": "Mbpp/2"}\n')
    b.write_text('{"task_id": "Mbpp/2"}\n')
    identity = CellIdentity()
    key_a = identity.key(RunConfig(**BASE, tasks_file=a))
    assert key_a == identity.key(RunConfig(**BASE, tasks_file=b))  # a moved file: one cell
    time.sleep(0.01)
    a.write_text('{"task_id": "Mbpp/3"}\n')
    assert CellIdentity().key(RunConfig(**BASE, tasks_file=a)) != key_a  # edited: another


TWO_SETS = """
name: two-sets
model_defaults: {backend: openai, base_url: "http://127.0.0.1:9/v1"}
models:
  - {name: A, model: org/a}
  - {name: A2, model: org/a, base_url: "http://127.0.0.1:10/v1"}
benchmarks:
  - {benchmark: mbppplus, name: set1, tasks_file: set1.jsonl, partition_size: 1}
  - {benchmark: mbppplus, name: set2, tasks_file: set2.jsonl, partition_size: 1}
"""


def test_two_task_sets_and_two_endpoints_are_four_cells_in_four_folders(tmp_path: Path) -> None:
    """Item 1: on main the two sets (and the two endpoints) were one key, the second cell was
    dropped, and a sweep declaring only set 2 found set 1's folder."""
    (tmp_path / "set1.jsonl").write_text('{"task_id": "Mbpp/2"}\n')
    (tmp_path / "set2.jsonl").write_text('{"task_id": "Mbpp/3"}\n')
    path = tmp_path / "s.yaml"
    path.write_text(TWO_SETS)
    _, _, cells = load(str(path))
    assert [c.label for c in cells] == [
        "A set1-42", "A set2-42", "A2 set1-42", "A2 set2-42",
    ]  # fmt: skip
    assert len({c.key for c in cells}) == 4
    out = tmp_path / "out"
    first = jobs_for(cells, out)
    first[0].run_dir.mkdir(parents=True)  # set 1's run of model A exists
    only2 = tmp_path / "t.yaml"
    only2.write_text(TWO_SETS.replace("name: set1, tasks_file: set1.jsonl", "name: set1, tasks_file: set2.jsonl").replace(
        "  - {benchmark: mbppplus, name: set2, tasks_file: set2.jsonl, partition_size: 1}\n", ""))  # fmt: skip
    (later,) = [j for j in jobs_for(load(str(only2))[2], out) if j.cell.model == "A"]
    assert later.run_dir != first[0].run_dir and later.run_dir.name.endswith(f"-{cells[1].key}-r0")


PANEL_EXCLUDES = "exclude:\n" + "".join(
    f"  - {{models: [Qwen3-8B], benchmarks: [mbppplus], partition_seeds: [{1000 + i}]}}\n"
    for i in range(1000)
)


def test_a_thousand_exclude_entries_plan_in_seconds(tmp_path: Path) -> None:
    """Item 4: 1,000 entries (46 KB) over the paper panel took 200 s of planning on main."""
    from hf_skillfollow.sweep import shipped_sweeps

    text = shipped_sweeps()["paper-panel"].read_text()
    path = tmp_path / "p.yaml"
    path.write_text(text + PANEL_EXCLUDES.replace("[1000]", "[42]"))
    start = time.perf_counter()
    _, _, cells = load(str(path))
    took = time.perf_counter() - start
    _, _, whole = load(str(shipped_sweeps()["paper-panel"]))
    gone = {c.key for c in whole} - {c.key for c in cells}
    assert gone and all(
        c.model == "Qwen3-8B" and c.benchmark == "mbppplus" and c.config.partition_seed == 42
        for c in whole if c.key in gone
    )  # fmt: skip
    assert took < 20, f"{took:.1f} s"


def _sweep(tmp_path: Path, extra: str = "", top: str = "") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nmodel_defaults: {backend: openai, base_url: 'http://127.0.0.1:9/v1'}\n"
        + top + "models:\n  - {name: A, model: org/a}\nbenchmarks:\n  - {benchmark: mbppplus}\n"
        + extra
    )  # fmt: skip
    return path


@pytest.mark.parametrize(
    "top,extra,message",
    [
        ("settings: {repeats: 3}\n", "", r"settings: .*'repeats': a sweep's runs per cell are its top-level `repeats"),
        ("model_defaults: {repeats: 3}\n", "", r"model_defaults: .*'repeats'"),
        ("", "axes: {repeats: [1, 2]}\n", r"axes: .*'repeats' is not an axis"),
        ("", "axes: {max_calls: []}\n", r"axes: .*axis 'max_calls' has no values"),
        ("", "top_k: [true]\n", r"top_k\.0: Input should be a valid integer"),
        ("", "axes: {max_calls: [true]}\n", r"max_calls: True is a yes/no value"),
        ("", "include:\n  - {models: []}\n", r"include\.0\.models: .*empty list"),
        ("", "exclude:\n  - {models: [Nope]}\n", r"exclude\[0\]\.models: unknown \['Nope'\]"),
        ("", "exclude:\n  - {benchmarks: [nope]}\n", r"exclude\[0\]\.benchmarks: unknown \['nope'\]"),
    ],
)  # fmt: skip
def test_settings_a_sweep_would_ignore_are_refused(
    tmp_path: Path, top: str, extra: str, message: str
) -> None:
    """Item 5: on main each of these was accepted and silently ignored or changed."""
    if top.startswith("model_defaults"):
        path = _sweep(tmp_path, extra)
        path.write_text(path.read_text().replace(
            "model_defaults: {backend: openai,", "model_defaults: {repeats: 3, backend: openai,"))  # fmt: skip
    else:
        path = _sweep(tmp_path, extra, top)
    with pytest.raises(SweepFileError, match=message):
        load(str(path))


def test_a_shipped_pool_name_is_the_shipped_pool_not_a_folder_beside_the_file(
    tmp_path: Path,
) -> None:
    """Item 5: on main `skill_pools: [math]` became `<sweep folder>/math`."""
    from hf_skillfollow._resources import shipped_pool
    from hf_skillfollow.skills import load_pool

    shutil.copytree(shipped_pool("coding"), tmp_path / "math")  # a decoy beside the file
    _, _, (cell,) = load(str(_sweep(tmp_path, "skill_pools: [math]\n")))
    assert cell.config.skills_dir == Path("math")
    assert CellIdentity().pool_hash(cell.config) == load_pool("math").content_hash
    _, _, (beside,) = load(str(_sweep(tmp_path, "skill_pools: [./math]\n")))
    assert beside.config.skills_dir == (tmp_path / "math").resolve()


def test_an_empty_shard_is_refused(tmp_path: Path) -> None:
    """Item 5: on main `--shard ""` ran every cell."""
    out = CliRunner().invoke(cli, ["sweep", str(_sweep(tmp_path)), "--plan", "--shard", ""])
    assert out.exit_code != 0 and "--shard: expected I/N" in out.output


_SHARD = """
import sys, time, types
from pathlib import Path
import hf_skillfollow.sweep._run as run

out, shard, start = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
slow = run.atomic_write_bytes
def slow_write(path, data):  # a slow disk: the window between reading and replacing grows
    time.sleep(0.3)
    slow(path, data)
run.atomic_write_bytes = slow_write
jobs = [types.SimpleNamespace(name=f"s{shard}-c{i}", run_dir=out / f"s{shard}-c{i}",
                              cell=types.SimpleNamespace(label=f"cell {shard}.{i}"))
        for i in range(3)]
result = run.SweepResult({j.name: run.JobResult("failed", 3, reason="down") for j in jobs})
time.sleep(max(0.0, start - time.time()))
run.write_status(out, jobs, result)
"""


def test_shards_finishing_together_lose_no_status_entry(tmp_path: Path) -> None:
    """Item 3: 8 shards of 3 failed cells each write the status file at once (in 8 processes);
    on main, unlocked read-merge-replace kept 17-24 of the 24 entries."""
    import json
    import subprocess
    import sys

    script = tmp_path / "shard.py"
    script.write_text(_SHARD)
    start = time.time() + 3
    procs = [
        subprocess.Popen([sys.executable, str(script), str(tmp_path / "out"), str(i), str(start)])
        for i in range(8)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    jobs = json.loads((tmp_path / "out" / "sweep-status.json").read_text())["jobs"]
    assert sorted(jobs) == sorted(f"s{s}-c{i}" for s in range(8) for i in range(3))


def test_a_broken_run_folder_is_in_the_status_file_with_the_command_that_continues_it(
    tmp_path: Path,
) -> None:
    """Item 3: on main a broken folder was missing from sweep-status.json and the advice was
    "run the same command again", which cannot help."""
    import json

    from hf_skillfollow.store import RunStore

    path = _sweep(tmp_path)
    out = tmp_path / "out"
    (job,) = jobs_for(load(str(path))[2], out)
    job.run_dir.mkdir(parents=True)
    RunStore(job.run_dir).write_manifest({"run_id": "r", "task_ids": ["Mbpp/2"]})
    (job.run_dir / "records.jsonl").write_text("garbage\n")
    result = CliRunner().invoke(cli, ["sweep", str(path), "-o", str(out), "--plain"])
    assert result.exit_code == 1
    advice = f"hf-skillfollow run --resume {job.run_dir} --set-aside-bad-records"
    assert advice in result.output and "run the same command again" not in result.output
    (entry,) = json.loads((out / "sweep-status.json").read_text())["jobs"].values()
    assert entry["status"] == "broken" and advice in entry["reason"]


def test_the_shipped_panel_uses_the_providers_model_ids() -> None:
    """Item 5: Table 22 prints `google/Gemini-2.5-Flash-lite`, the one upper-case id of 17;
    OpenRouter lists `google/gemini-2.5-flash-lite` (its ids are lower case)."""
    from hf_skillfollow.sweep import shipped_sweeps

    _, _, cells = load(str(shipped_sweeps()["paper-panel"]))
    ids = {c.model: c.config.model for c in cells}
    assert ids["Gemini-2.5-Flash-lite"] == "google/gemini-2.5-flash-lite"
    assert len(ids) == 17 and all(i == i.lower() for i in ids.values())


def test_an_unreachable_ray_address_fails_at_once(tmp_path: Path) -> None:
    """Item 5: on main `ray.init` on an address where nothing listens had not failed after
    200 s. The address is probed first (no Ray needed to see it)."""
    import socket

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.perf_counter()
    out = CliRunner().invoke(cli, ["sweep", str(_sweep(tmp_path)), "-o", str(tmp_path / "o"),
                                   "--executor", "ray", "--ray-address", f"127.0.0.1:{port}"])  # fmt: skip
    assert time.perf_counter() - start < 30
    assert (
        out.exit_code == 1
        and f"--ray-address 127.0.0.1:{port}: nothing answers there" in out.output
    )


def test_a_cell_no_node_can_hold_is_refused_with_what_it_asks() -> None:
    """Item 5: on main a cell asking `num_gpus: 1` of a CPU-only cluster waited forever."""
    from hf_skillfollow.sweep._executors._ray import unschedulable

    cpu_only = [{"CPU": 2.0, "memory": 1e9}, {"CPU": 1.0}]
    assert unschedulable({"CPU": 1, "GPU": 0}, cpu_only) is None
    assert unschedulable({"CPU": 1, "GPU": 1}, cpu_only) == (
        "no node of the cluster has GPU 1 (the largest node has 0); set the model's `resources` "
        "to what a node has"
    )
    # each resource exists somewhere, but on no one node together
    split = [{"CPU": 4.0}, {"CPU": 1.0, "model:x": 1.0}]
    assert "these resources together" in unschedulable({"CPU": 2, "model:x": 1}, split)
