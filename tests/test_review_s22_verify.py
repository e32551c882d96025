"""Review of session 22's `verify` commits (R5): attacks on the new code paths.

Real runs as in tests/test_verify_attacks_s22.py (the MATH-500 run over
`ScriptedModelServerDouble`, the judged own-tasks run over `AgentAndJudgeDouble`), the real
`verify` command; hostile bytes where a publisher controls them.
"""

from __future__ import annotations

import errno
import os
import re

import pyarrow.parquet as pq
import pytest

from tests import test_verify_attacks_s22 as s22
from tests.test_verify_attacks_s22 import _copy, _edit_judge_records, _records, verify

#: the real runs of tests/test_verify_attacks_s22.py (module fixtures, built once here too)
math_run = s22.math_run
judged_run = s22.judged_run
_verify_judged = s22._verify_judged


def _unknown_backend(record: dict) -> dict:
    record["settings"]["backend"] = "my-own-backend"
    return record


def test_a_judge_recorded_on_a_backend_this_toolkit_lacks_is_one_error(judged_run, tmp_path):
    """A judge record naming a backend this toolkit has no such thing as (the publisher's word),
    re-graded at the verifier's --judge-base-url: one error, exit 2, naming it."""
    run = _copy(judged_run, tmp_path / "run")
    _edit_judge_records(run, _unknown_backend)
    code, out, err = _verify_judged(run, tmp_path, "--judge-base-url", "http://127.0.0.1:9/v1")
    assert code == 2, out + err
    assert "my-own-backend" in err and "Traceback" not in err
    assert "which this toolkit does not have" in err


@pytest.mark.parametrize("code", [errno.EPERM, errno.EOPNOTSUPP])
def test_a_record_is_written_on_a_filesystem_without_hard_links(
    math_run, tmp_path, monkeypatch, code
):
    """ff58b1e writes a record under a temporary name and link(2)s it to its own. FAT, exFAT
    and many network or FUSE mounts have no hard links: link(2) fails there (EPERM per the
    Linux man page; EOPNOTSUPP on others), and every verify on such a disk exited 2 'the
    verification ran but its record was not written'. Such a filesystem cannot be mounted
    here, so `link_on_a_filesystem_without_hard_links` stands in for the kernel's link(2)."""

    def link_on_a_filesystem_without_hard_links(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "link", link_on_a_filesystem_without_hard_links)
    run = _copy(math_run, tmp_path / "run")
    code_, out, err = verify(str(run), "--state", str(tmp_path / "s.jsonl"))
    assert code_ == 0, out + err
    (record,) = _records(run)
    assert pq.read_table(record).num_rows == 4
    assert sorted(p.name for p in (run / "verifications").iterdir()) == [record.name]


def test_a_link_error_that_is_not_the_filesystem_s_is_still_an_error(
    math_run, tmp_path, monkeypatch
):
    """Guard: link(2) failing for another reason (the disk full) writes nothing in place."""

    def link_on_a_full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "link", link_on_a_full_disk)
    run = _copy(math_run, tmp_path / "run")
    code, out, err = verify(str(run), "--state", str(tmp_path / "s.jsonl"))
    assert code == 2 and "its record was not written" in err, out + err
    assert list((run / "verifications").iterdir()) == []


def test_a_verify_killed_while_writing_its_records_leaves_none(math_run, tmp_path):
    """15feb9c removes the records a failed write had written, but a verify *killed* between
    two records (SIGKILL, the OOM killer; here SIGXFSZ's default action, the process may
    write 8,000 bytes per file and run-b's record is ~11 KB) ran no cleanup: run-a's record
    stayed, and the rerun wrote a second record of run-a. Now every record is written whole
    under a temporary name before any takes its own, so the kill leaves none."""
    import resource
    import secrets
    import signal
    import subprocess
    import sys

    folder = tmp_path / "runs"
    a = _copy(math_run, folder / "run-a")
    b = _copy(math_run, folder / "run-b")
    s22._as_run(a, "run-a")
    s22._as_run(b, "run-b")
    s22._set_rows(b, "cell_id", secrets.token_urlsafe(4500)[:6000])
    state = tmp_path / "s.jsonl"
    # Python ignores SIGXFSZ; the process under test puts back the kernel's default (kill)
    killed_on_a_full_file = (
        "import runpy, signal; signal.signal(signal.SIGXFSZ, signal.SIG_DFL); "
        "runpy.run_module('hf_skillfollow.cli', run_name='__main__')"
    )
    verify_args = ["verify", str(folder), "--state", str(state)]
    args = [sys.executable, "-c", killed_on_a_full_file, *verify_args]

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (8000, resource.RLIM_INFINITY))

    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, preexec_fn=limit)
    assert proc.returncode == -signal.SIGXFSZ, proc.stdout + proc.stderr
    assert _records(a) == [] and _records(b) == []
    rerun = [sys.executable, "-m", "hf_skillfollow.cli", *verify_args]
    proc = subprocess.run(rerun, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(_records(a)) == 1 and len(_records(b)) == 1


def test_two_verifies_that_found_no_state_both_keep_their_verdicts(tmp_path):
    """32dc393 writes each verdict through at once; but a state file that held no verdict was
    opened with "w" (no O_APPEND), so two verifies of the same sources started together (the
    same default state file) each wrote from offset 0, over the other's lines: one verdict
    of two survived. Now the file is appended to unless --fresh."""
    from hf_skillfollow.verify._state import VerifyState

    state = tmp_path / "s.jsonl"
    first, second = VerifyState(state), VerifyState(state)
    with first, second:
        first.add("key-a", True, "scored by the first verify")
        second.add("key-b", False, "scored by the second verify")
    assert VerifyState(state).done == {
        "key-a": {"passed": True, "reason": "scored by the first verify"},
        "key-b": {"passed": False, "reason": "scored by the second verify"},
    }


def _long_judge_name(record: dict) -> dict:
    model = "org/judge-" + "x" * 100_000
    record["settings"]["model"] = model
    record["judge"] = f"{model}@{record['judge'].rsplit('@', 1)[1]}"
    return record


def test_a_judge_name_of_any_length_is_quoted_in_part(judged_run, tmp_path):
    """A judge record is the publisher's, its model name of any length. Before: the refusal
    to re-grade without --judge-base-url quoted it whole, a 100,211-character error line."""
    run = _copy(judged_run, tmp_path / "run")
    _edit_judge_records(run, _long_judge_name)
    code, out, err = _verify_judged(run, tmp_path)
    assert code == 2, out + err
    assert "the rows are graded by the judge org/judge-xxx" in err
    assert re.search(r"x… \(100,0\d\d characters\) \(backend openai\)", err) and len(err) < 2_000, (
        err
    )
