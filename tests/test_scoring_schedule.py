"""score_many's order of work (pure bookkeeping, no scoring): references first, then programs
longest first by measured cost, a thread waiting while a reference may still release work."""

from __future__ import annotations

import threading
import time

from hf_skillfollow.scoring._schedule import Schedule


def _drain(schedule: Schedule, costs: dict[str, float]) -> list[tuple[str, object]]:
    taken = []
    while (item := schedule.take()) is not None:
        taken.append(item)
        if item[0] == "reference":
            schedule.reference_done(item[1], costs[str(item[1])])
    return taken


def test_references_first_then_programs_by_cost_descending() -> None:
    schedule = Schedule(
        references=["slow-guess", "fast-guess"],
        waiting={"slow-guess": [0], "fast-guess": [1, 2]},
        ready={3: 0.5, 4: 7.0},
    )
    taken = _drain(schedule, {"slow-guess": 1.0, "fast-guess": 9.0})
    assert taken == [
        ("reference", "slow-guess"),
        ("reference", "fast-guess"),
        ("program", 1),
        ("program", 2),
        ("program", 4),
        ("program", 0),
        ("program", 3),
    ]
    assert schedule.take() is None


def test_a_thread_waits_for_the_programs_a_running_reference_releases() -> None:
    schedule = Schedule(references=["k"], waiting={"k": [0]}, ready={})
    assert schedule.take() == ("reference", "k")
    got: list[object] = []
    other = threading.Thread(target=lambda: got.append(schedule.take()))
    other.start()
    time.sleep(0.2)
    assert got == []  # not None: the reference in progress will release program 0
    schedule.reference_done("k", 2.0)
    other.join(timeout=5)
    assert got == [("program", 0)]
    assert schedule.take() is None


def test_close_releases_waiting_threads_with_nothing() -> None:
    schedule = Schedule(references=["k"], waiting={"k": [0, 1]}, ready={})
    schedule.take()
    got: list[object] = []
    other = threading.Thread(target=lambda: got.append(schedule.take()))
    other.start()
    time.sleep(0.1)
    schedule.close()
    other.join(timeout=5)
    assert got == [None]
    schedule.reference_done("k", 1.0)
    assert schedule.take() is None
