"""`run --harness harbor` staging: `[environment] cpus` held to the sandbox's ceiling before
Harbor starts, and Harbor's deprecated size strings (`memory = "8G"`) that it cannot read
refused for every environment (default suite; Harbor's own parser is asked where
.venv-harbor holds it).

Each refusal test failed on the code before its mend (docs/harness.md says what is done now).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from hf_skillfollow.harness import _stage
from tests.test_harness_attacks_round2 import _task
from tests.test_harness_left_items import _staged_run

ROOT = Path(__file__).resolve().parents[1]
HARBOR_PYTHON = ROOT / ".venv-harbor" / "bin" / "python"


def _host_cpus() -> int:
    return len(os.sched_getaffinity(0))


# ------------------------------------------------------------- 1. cpus, --env sandbox


@pytest.mark.parametrize(
    ("written", "said", "why"),
    [
        ("{over}", "{over}", "over"),
        ("{over}.5", "{over}.5", "over"),
        ("0", "0", "zero"),
        ("0.0", "0", "zero"),  # Harbor reads a whole float as an int (normalize_cpus)
    ],
)
def test_sandbox_cpus_over_the_host_or_not_above_zero_is_refused_before_harbor_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: str, said: str, why: str
) -> None:
    # Before, cpus was refused only as each trial started inside Harbor (79a9702): the run
    # staged the task and went on to Harbor (here /bin/false: 'harbor (...) exited with 1'),
    # one job start per trial of both arms, each ending in the same refusal.
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")  # never reached
    over = _host_cpus() + 1
    task = _task(tmp_path / "in", "greedy", f"[environment]\ncpus = {written.format(over=over)}\n")
    _task(tmp_path / "in", "fine", "[environment]\ncpus = 1\n")
    code, output = _staged_run(tmp_path, "sandbox")
    assert code == 1
    tail = (
        f"over the sandbox's ceiling of {_host_cpus()} (the cores this host lets Harbor run on)"
        if why == "over"
        else "not above 0"
    )
    line = f"{task / 'task.toml'}: [environment] cpus = {said.format(over=over)}: {tail}"
    assert output.strip() == f"Error: {line}"
    assert not list((tmp_path / "runs").glob("harbor-*/jobs/*"))  # no job was begun


def test_sandbox_cpus_up_to_the_host_and_any_cpus_elsewhere_pass_staging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guard: every core of the host, or a fraction of one, is allowed in the sandbox; Docker
    # and the cloud environments size a trial themselves, so the host's cores are not their
    # ceiling (staging passes and Harbor, here /bin/false, is started).
    fine = [
        _task(tmp_path / "sandbox", name, f"[environment]\ncpus = {cpus}\n")
        for name, cpus in (("all", _host_cpus()), ("half", 0.5), ("whole", f"{_host_cpus()}.0"))
    ]
    _stage.check_sandbox_sizes(fine)  # no error
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    _task(tmp_path / "in", "big", f"[environment]\ncpus = {_host_cpus() + 1}\n")
    code, output = _staged_run(tmp_path, "docker")
    assert code == 1 and "harbor (both job) exited with 1" in output, output


# ------------------------------------------ 2. deprecated size strings, every environment

#: spellings Harbor 0.26's `EnvironmentConfig._parse_size_to_mb` crashes on (OverflowError,
#: not caught by pydantic: a traceback), refuses (ValueError), or reads as no size a task
#: may have (negative, or past `_check_numbers`' 2**40 MB)
UNREADABLE = [
    "infG",
    "-infK",
    "1e999M",
    "1" + "0" * 400 + "M",  # float() gives inf, int() of it overflows
    "1e308G",  # finite, but times 1024 is inf
    "nanG",
    "G",
    "8",
    "0x10M",
    "1e300G",  # read as a 300-digit number of MB
    "-1G",
]
#: spellings Harbor reads as an ordinary size (its parser strips, upper-cases, takes float())
READABLE = {"8G": 8192, " 8 g ": 8192, "512M": 512, "1_0G": 10240, "2048K": 2, "1.5G": 1536}


@pytest.mark.parametrize("env", ["docker", "sandbox"])
@pytest.mark.parametrize("key", ["memory", "storage"])
@pytest.mark.parametrize("value", UNREADABLE)
def test_a_deprecated_size_harbor_cannot_read_is_refused_at_staging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, key: str, value: str
) -> None:
    # Before, staging passed `memory = "infG"` (and the others) and Harbor was started; Harbor
    # 0.26 then ended on an OverflowError traceback while reading the task (or refused it).
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")  # never reached
    task = _task(tmp_path / "in", "odd", f"[environment]\n{key} = {json.dumps(value)}\n")
    code, output = _staged_run(tmp_path, env)
    assert code == 1
    said = f"[environment] {key} = {ascii(value)[:40]}"
    assert output.strip() == (
        f"Error: {task / 'task.toml'}: {said}: not a size Harbor 0.26 reads as 0 to {1 << 40} "
        "MB (a finite number and G, M or K: '8G', '512M')"
    )
    assert not list((tmp_path / "runs").glob("harbor-*/jobs/*"))


#: the other tables Harbor 0.26 reads as an EnvironmentConfig, each with the same parser
OTHER_TABLES = {
    "verifier.environment": '[verifier.environment]\nmemory = "infG"\n',
    "steps[1].verifier.environment": (
        '[[steps]]\nname = "a"\n[[steps]]\nname = "b"\n'
        '[steps.verifier.environment]\nmemory = "infG"\n'
    ),
}


@pytest.mark.parametrize("table", sorted(OTHER_TABLES))
def test_a_deprecated_size_in_a_verifier_s_environment_is_refused_too(
    tmp_path: Path, table: str
) -> None:
    task = _task(tmp_path / "in", "odd", OTHER_TABLES[table])
    with pytest.raises(_stage.StageError) as err:
        _stage.stage_tasks([task], tmp_path / "both")
    assert str(err.value).startswith(f"{task / 'task.toml'}: [{table}] memory = 'infG': not a")


@pytest.mark.parametrize("value", sorted(READABLE))
def test_a_deprecated_size_harbor_reads_passes_staging(tmp_path: Path, value: str) -> None:
    task = _task(tmp_path / "in", "fine", f"[environment]\nmemory = {json.dumps(value)}\n")
    assert _stage.stage_tasks([task], tmp_path / "both").names == ["fine"]


@pytest.mark.harbor  # Harbor 0.26's own parser, in .venv-harbor (CI step 4, after .ci/setup-harbor)
def test_staging_reads_deprecated_sizes_as_harbor_0_26_does() -> None:
    # Harbor's own parser, in its own interpreter: every spelling refused here either stops
    # Harbor (an exception) or gives a size out of 0..2**40 MB, and every one passed gives the
    # MB staging compares with the sandbox's ceiling.
    probe = (
        "import json, sys\n"
        "from harbor.models.task.config import EnvironmentConfig\n"
        "out = {}\n"
        "for v in json.load(sys.stdin):\n"
        "    try:\n"
        "        out[v] = EnvironmentConfig.model_validate({'memory': v}).memory_mb\n"
        "    except Exception as exc:\n"
        "        out[v] = type(exc).__name__\n"
        "import tomllib\n"
        "from harbor.models.task.config import TaskConfig\n"
        "for name, toml in TABLES.items():\n"
        "    try:\n"
        "        TaskConfig.model_validate(tomllib.loads(toml))\n"
        "        out[name] = 'read'\n"
        "    except Exception as exc:\n"
        "        out[name] = type(exc).__name__\n"
        "print(json.dumps(out))\n"
    )
    probe = f"TABLES = {OTHER_TABLES!r}\n" + probe
    values = UNREADABLE + sorted(READABLE)
    done = subprocess.run(
        [str(HARBOR_PYTHON), "-c", probe],
        input=json.dumps(values),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    harbor = json.loads(done.stdout)
    assert harbor["infG"] == "OverflowError"  # the traceback staging now prevents
    assert all(harbor[table] == "OverflowError" for table in OTHER_TABLES), harbor
    for value in UNREADABLE:
        read, ours = harbor[value], _stage._harbor_size_mb(value)
        assert isinstance(read, str) or not 0 <= read <= 1 << 40, (value, read)
        assert ours is None if isinstance(read, str) else ours == read, (value, read, ours)
    for value, mb in READABLE.items():
        assert harbor[value] == mb == _stage._harbor_size_mb(value), value
