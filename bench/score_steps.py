"""Benchmark: where the fixed cost of one sandboxed program run goes, step by step.

Scores programs one at a time through the real path (``_code.score_program``: the expected
outputs' header, the request, a zygote's fork, namespaces, the minimal root, confinement,
the judge and the program's process, teardown) with timestamps taken at each step's
boundaries, in every process involved: the bench's own (the host), the zygote and the run.
The marks come from wrappers this bench puts around the scorer's functions (in the host
process, and in a zygote started with them through ``python -c``), so the scorer's code
is measured as it is; each wrapper costs a few microseconds. Wall milliseconds per step
are medians over ``--repeats`` runs (after ``--warmup`` runs that start the zygote and warm
the caches), with the run's CPU milliseconds beside them:

- harness CPU: the run's own process (the harness, and the judge after confinement), at the
  step's end (``time.process_time`` from the fork), and the page faults it took in the step
  (minor faults: mostly copy-on-write of the zygote's memory and fresh pages);
- program CPU: the program's process (``RUSAGE_CHILDREN`` of the judge once it is reaped);
- tree CPU: the run with every process it waited for, as the zygote reports it (``wait4``);
  tree - harness - program is the exit of the harness (its memory, its namespaces);
- zygote CPU per run and host CPU per run: averages over the timed runs (the zygote's from
  ``/proc/PID/stat``, in clock ticks);
- machine CPU per run: every CPU's busy time over the timed runs (``/proc/stat``) divided by
  the runs: it holds the kernel's own work for the runs (network namespaces are freed by a
  kernel worker) and whatever else the machine was doing, so it is only read with the load.

Programs: ``canonical`` (the task's canonical solution, which passes; its canonical CPU
measured in process is printed beside it) and ``fail`` (``raise ValueError`` on load: the
run's fixed cost alone).

``--sweep BENCHMARK`` instead scores every task's canonical solution once, one after the
other through one zygote, without the wrappers, once the expected outputs are cached (filled
first, untimed), and prints each run's CPU beyond its canonical solution's (the run's tree
CPU, ``wait4``, less the canonical CPU measured when the expected outputs were computed) over
the tasks whose canonical solution takes under 50 ms, with the host's, the zygote's and the
machine's CPU per run over the whole sweep.

    python bench/score_steps.py [--data-dir DIR] [--tasks HumanEval/0,HumanEval/2,...]
                                [--programs canonical,fail] [--repeats 30] [--warmup 3]
    python bench/score_steps.py --sweep humanevalplus|mbppplus [--limit N] [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

# bench/ is this script's own folder, so its sibling bench/score.py imports as ``score``.
from score import SUITES, _data_dir

FILE = SUITES["humanevalplus"].file
FAIL = "raise ValueError('fails at once')\n"

#: runs inside the zygote (``python -c``): wrappers that mark each step of a run
_TRACER = r"""
import resource, sys, time
from hf_skillfollow.scoring import _harness, _judge, _rootfs, _zygote

marks = []
last = [None]

def now():
    return (time.monotonic_ns(), time.process_time_ns(), resource.getrusage(0).ru_minflt)

def mark(name):
    marks.append((name, *now()))

def around(module, name, before, after):
    fn = getattr(module, name)
    def wrapped(*args, **kwargs):
        mark(before)
        try:
            return fn(*args, **kwargs)
        finally:
            mark(after)
    setattr(module, name, wrapped)

fork = _zygote._fork
def traced_fork(*args):
    marks.clear()  # in the zygote: this run's marks start here; the run inherits them
    last[0] = None
    mark("zygote-recv")
    return fork(*args)
_zygote._fork = traced_fork

start = _zygote.start
def traced_start(*args):
    mark("run")
    start(*args)
_zygote.start = traced_start

around(_zygote, "enter_namespaces", "ns", "ns-done")
around(_zygote, "become_init", "init", "init-done")
serve = _harness.serve
def traced_serve(req):
    mark("serve")
    serve(req)
_harness.serve = traced_serve
around(_harness, "_confine_self", "confine", "confine-done")
around(_rootfs, "enter", "root", "root-done")
around(_judge, "_load_expected", "expected", "expected-done")

receive = _judge._receive
def traced_receive(*args):
    got = receive(*args)
    at = now()
    if last[0] is None:
        marks.append(("loaded", *at))
    last[0] = at
    return got
_judge._receive = traced_receive

judge = _judge.judge
def traced_judge(*args):
    mark("judge")
    result = judge(*args)
    if last[0] is not None:
        marks.append(("last-output", *last[0]))
    mark("judged")
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["trace"] = {
        "marks": marks,
        "program_cpu_ns": int((child.ru_utime + child.ru_stime) * 1e9),
    }
    return result
_judge.judge = traced_judge

_zygote.main(int(sys.argv[1]), sys.argv[2], *sys.argv[3:4])
"""

#: (label, from mark, to mark): the steps of one run, in order; "host" marks are the bench's
STEPS = (
    ("host: header, request, files", "score", "send"),
    ("request -> zygote", "send", "zygote-recv"),
    ("zygote: fork the run", "zygote-recv", "run"),
    ("run: read the request", "run", "ns"),
    ("namespaces (unshare)", "ns", "ns-done"),
    ("init: private /, /proc", "init", "init-done"),
    ("task's data (inputs)", "serve", "confine"),
    ("minimal root", "root", "root-done"),
    ("rest of confinement", "root-done", "confine-done"),
    ("program: fork .. loaded", "judge", "loaded"),
    ("  of which expected outputs", "expected", "expected-done"),
    ("outputs: judged as sent", "loaded", "last-output"),
    ("program: kill and reap", "last-output", "judged"),
    ("result, exit, teardown", "judged", "exit"),
    ("host: after the exit", "exit", "scored"),
)


class HostTrace:
    """Marks in the bench's own process around the scorer's host-side calls."""

    def __init__(self) -> None:
        self.marks: dict[str, int] = {}
        self.tree_cpu: float = 0.0
        self.result: dict[str, Any] = {}

    def mark(self, name: str) -> None:
        self.marks[name] = time.monotonic_ns()

    def install(self) -> None:
        from hf_skillfollow.scoring import _sandbox

        _sandbox.isolation_mode()  # probed (and cached) with the plain zygote command
        zygote_start, zygote_ended, run = (
            _sandbox._Zygote.start,
            _sandbox._Zygote.ended,
            _sandbox.run,
        )

        def start(zygote: Any, fds: list[int]) -> int | None:
            self.mark("send")
            return zygote_start(zygote, fds)

        def ended(zygote: Any, timeout: float) -> tuple[int, float] | None:
            got = zygote_ended(zygote, timeout)
            self.mark("exit")
            self.tree_cpu = got[1] if got is not None else 0.0
            return got

        def traced_run(*args: Any, **kwargs: Any) -> Any:
            outcome = run(*args, **kwargs)
            self.result = outcome.result
            return outcome

        _sandbox._Zygote.start = start  # type: ignore[method-assign]
        _sandbox._Zygote.ended = ended  # type: ignore[method-assign]
        _sandbox.run = traced_run
        _sandbox._ZYGOTE = [sys.executable, "-s", "-P", "-c", _TRACER]


def _busy_ticks() -> int:
    """Every CPU's busy clock ticks so far (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4]  # less idle and iowait


def _process_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def one_run(trace: HostTrace, score: Callable[[], Any]) -> dict[str, Any]:
    """Score once; the marks of every process (ms since the start) and CPU figures."""
    trace.marks, trace.result = {}, {}
    trace.mark("score")
    verdict = score()
    trace.mark("scored")
    run = trace.result.get("trace")
    if run is None:
        raise SystemExit(f"no trace came back: {trace.result}")
    t0 = trace.marks["score"]
    wall = {name: (t - t0) / 1e6 for name, t in trace.marks.items()}
    cpu, faults = {}, {}
    for name, t, c, f in run["marks"]:
        wall[name] = (t - t0) / 1e6
        if name != "zygote-recv":  # the zygote's own clock, not the run's
            cpu[name], faults[name] = c / 1e6, f
    return {
        "passed": verdict.passed,
        "reason": verdict.reason,
        "wall": wall,
        "cpu": cpu,
        "faults": faults,
        "program_cpu": run["program_cpu_ns"] / 1e6,
        "tree_cpu": trace.tree_cpu * 1e3,
    }


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(label: str, runs: list[dict[str, Any]], per_run: dict[str, float]) -> None:
    """Median wall ms per step, the harness's CPU at its end, and the run's CPU totals."""
    print(f"\n{label}: {len(runs)} runs; {runs[0]['reason']}")
    print(f"  {'step':<32}{'wall ms':>9}{'harness CPU ms':>16}{'faults':>8}")
    for name, a, b in STEPS:
        spans = [r["wall"][b] - r["wall"][a] for r in runs if a in r["wall"] and b in r["wall"]]
        if not spans:
            continue
        at_end = [r["cpu"][b] for r in runs if b in r["cpu"]]
        cpu = f"{_median(at_end):.2f}" if at_end else ""
        both = [r for r in runs if a in r["faults"] and b in r["faults"]]
        faults = f"{_median([r['faults'][b] - r['faults'][a] for r in both]):.0f}" if both else ""
        print(f"  {name:<32}{_median(spans):>9.2f}{cpu:>16}{faults:>8}")
    total = _median([r["wall"]["scored"] for r in runs])
    harness = _median([r["cpu"]["judged"] for r in runs])
    program = _median([r["program_cpu"] for r in runs])
    tree = _median([r["tree_cpu"] for r in runs])
    print(f"  {'total wall':<32}{total:>9.2f}")
    print(
        f"  CPU ms per run (medians): harness {harness:.2f}, program {program:.2f}, "
        f"tree {tree:.2f} (so the harness's exit {tree - harness - program:.2f}); averages: "
        + ", ".join(f"{k} {v:.2f}" for k, v in per_run.items())
    )


def bench(tasks: list[Any], programs: list[str], repeats: int, warmup: int) -> None:
    from hf_skillfollow.scoring import _code, _sandbox

    trace = HostTrace()
    trace.install()
    for task in tasks:
        _, header = _code.ensure_expected(task)
        canonical_ms = 1e3 * (header["base_cpu_s"] + header["plus_cpu_s"])
        inputs = len(task.problem["base_input"]) + len(task.problem["plus_input"])
        for kind in programs:
            code = task.problem["prompt"] + task.problem["canonical_solution"]
            program = code if kind == "canonical" else FAIL

            def score(task: Any = task, program: str = program) -> Any:
                return _code.score_program(task, program)

            for _ in range(warmup):
                one_run(trace, score)
            zygote = _sandbox._zygotes.all[0].proc.pid
            ticks = os.sysconf("SC_CLK_TCK")
            busy, own, host = _busy_ticks(), _process_ticks(zygote), time.process_time()
            runs = [one_run(trace, score) for _ in range(repeats)]
            per_run = {
                "zygote": 1e3 * (_process_ticks(zygote) - own) / ticks / repeats,
                "host": 1e3 * (time.process_time() - host) / repeats,
                "machine": 1e3 * (_busy_ticks() - busy) / ticks / repeats,
            }
            if kind == "canonical" and not all(r["passed"] for r in runs):
                raise SystemExit(f"{task.task_id}: the canonical solution failed: {runs[0]}")
            label = f"{task.task_id} {kind} ({inputs} inputs"
            label += f", canonical CPU {canonical_ms:.1f} ms)" if kind == "canonical" else ")"
            report(label, runs, per_run)
            print(f"  load average now {_load()}")


def _load() -> str:
    """The load averages (1, 5, 15 minutes), as printed beside every figure."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


#: a sweep's tasks whose canonical solution costs under this are its fixed-cost sample
SMALL_S = 0.05


def sweep(tasks: list[Any]) -> None:
    """Each canonical solution scored once, in order; the CPU of its run beyond it."""
    from hf_skillfollow.scoring import _code, _sandbox

    canonical = {}
    for task in tasks:  # untimed: the expected outputs (and their canonical CPU) cached
        _, header = _code.ensure_expected(task)
        canonical[task.task_id] = header["base_cpu_s"] + header["plus_cpu_s"]
    run, cpu = _sandbox.run, [0.0]

    def measured(*args: Any, **kwargs: Any) -> Any:
        outcome = run(*args, **kwargs)
        cpu[0] = outcome.details["cpu_s"]
        return outcome

    _sandbox.run = measured

    def program(task: Any) -> str:
        return task.problem["prompt"] + task.problem["canonical_solution"]

    _code.score_program(tasks[0], program(tasks[0]))  # the zygote started, untimed
    zygote, ticks = _sandbox._zygotes.all[0].proc.pid, os.sysconf("SC_CLK_TCK")
    busy, own, host, wall = _busy_ticks(), _process_ticks(zygote), time.process_time(), time.time()
    beyond, passed = [], 0
    for task in tasks:
        passed += _code.score_program(task, program(task)).passed
        if canonical[task.task_id] < SMALL_S:
            beyond.append(1e3 * (cpu[0] - canonical[task.task_id]))
    n = len(tasks)
    print(
        f"{passed}/{n} canonical solutions passed; {len(beyond)} take under "
        f"{1e3 * SMALL_S:.0f} ms: their runs' CPU beyond it, mean {statistics.mean(beyond):.2f} "
        f"ms, median {_median(beyond):.2f} ms (ms resolution each)"
    )
    print(
        f"per run over all {n}: host CPU {1e3 * (time.process_time() - host) / n:.2f} ms, "
        f"zygote {1e3 * (_process_ticks(zygote) - own) / ticks / n:.2f} ms, machine "
        f"{1e3 * (_busy_ticks() - busy) / ticks / n:.2f} ms, wall {1e3 * (time.time() - wall) / n:.2f}"
        f" ms; load average now {_load()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", help="folder holding " + FILE)
    parser.add_argument(
        "--sweep", choices=sorted(SUITES), help="every canonical solution once (see above)"
    )
    parser.add_argument("--limit", type=int, help="--sweep: the first N tasks only")
    parser.add_argument(
        "--tasks",
        default="HumanEval/0,HumanEval/2,HumanEval/4,HumanEval/7,HumanEval/23",
        help="HumanEval+ task ids, comma-separated [HumanEval/0,2,4,7,23]",
    )
    parser.add_argument("--programs", default="canonical,fail", help="[canonical,fail]")
    parser.add_argument("--repeats", type=int, default=30, help="timed runs per program [30]")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first [3]")
    parser.add_argument(
        "--cache-dir",
        help="expected-output cache (default: a fresh temporary one, filled on first use)",
    )
    args = parser.parse_args()
    programs = args.programs.split(",")
    if not set(programs) <= {"canonical", "fail"} or args.repeats < 1 or args.warmup < 1:
        parser.error("--programs takes canonical and/or fail; --repeats and --warmup >= 1")
    benchmark = args.sweep or "humanevalplus"
    path = _data_dir(args.data_dir) / SUITES[benchmark].file
    if not path.is_file():
        sys.exit(
            f"{benchmark} data not found: {path} (pass --data-dir or set SKILLFOLLOW_DATA_DIR)"
        )
    with tempfile.TemporaryDirectory(prefix="bench-steps-") as tmp:
        os.environ["SKILLFOLLOW_CACHE_DIR"] = args.cache_dir or tmp
        from hf_skillfollow.scoring import _sandbox
        from hf_skillfollow.tasks import load_tasks

        loaded = load_tasks(benchmark, path)[0]
        if args.sweep:
            print(
                f"score_steps --sweep {benchmark}: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
                f", isolation {_sandbox.isolation_mode()}, load average {_load()}"
            )
            sweep(loaded[: args.limit])
            return
        by_id = {t.task_id: t for t in loaded}
        wanted = args.tasks.split(",")
        unknown = [t for t in wanted if t not in by_id]
        if unknown:
            sys.exit(f"--tasks: not in {path.name}: {', '.join(unknown)}")
        print(
            f"score_steps: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{os.cpu_count()} CPUs, isolation {_sandbox.isolation_mode()}, load average "
            f"{_load()}; {args.repeats} timed runs per program, medians"
        )
        bench([by_id[t] for t in wanted], programs, args.repeats, args.warmup)
        print(json.dumps({"load_average_end": os.getloadavg()}))


if __name__ == "__main__":
    main()
