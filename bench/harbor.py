"""`run --harness harbor` against running the same Harbor job(s) directly, side by side.

One scripted endpoint (tests/_harbor_double.py's Terminus double) with a fixed latency per
request and a fixed number of request slots, so its limit is known:
``slots * 60 / latency`` requests per minute. The modes run the shipped example tasks:

- `ours`: ``hf-skillfollow run --harness harbor`` (staging, the job, the import);
- `direct`: the same job file(s) given to ``harbor run`` (one job of both arms here; two at
  once where ours ran two), then ``hf-skillfollow import harbor`` (``--job``, or
  ``--with-skills``/``--without-skills``): what a user would do by hand;
- `two jobs` (``--two-jobs``): the layout before 5 Dec 2026, for comparison in the same
  session: ours' job file split into one job per arm, each with half of the trial slots, both
  given to ``harbor run`` at once, then imported per arm.

Printed: the load average (other work on the machine slows every mode), wall time of each,
the overhead ours adds per trial (target: under 5% of the trial time), each mode's trials per
minute against the endpoint's limit in trials (requests per minute over requests per trial;
target at --concurrency 8: at least 0.8x), over the whole run and over the jobs' own window
(first trial started to last trial finished: without the run's fixed start and import), and
where ours' trials' time went (medians of Harbor's own phase timings in each trial's
result.json).

    .ci/setup-harbor && .venv/bin/python bench/harbor.py [--trials 2] [--concurrency 8] [--two-jobs]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests._harbor_double import TerminusModelDouble  # noqa: E402
from tests._http_double import Reply  # noqa: E402

DATA = ROOT / "toolkit" / "hf_skillfollow" / "_data" / "harbor_tasks"


class LimitedDouble(TerminusModelDouble):
    """The Terminus double behind `slots` request slots of `latency_s` each."""

    def __init__(self, tasks_dir: Path, slots: int, latency_s: float) -> None:
        super().__init__(tasks_dir)
        self.slots = threading.Semaphore(slots)
        self.latency_s = latency_s

    def answer(self, raw: bytes) -> Reply:
        with self.slots:
            time.sleep(self.latency_s)
            return super().answer(raw)


def _timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{argv[:4]} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.monotonic() - start


def _seconds(span: dict | None) -> float | None:
    if not span or not span.get("started_at") or not span.get("finished_at"):
        return None
    start, end = (datetime.fromisoformat(span[k]) for k in ("started_at", "finished_at"))
    return (end - start).total_seconds()


def _trials(jobs: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(jobs.glob("*/*/result.json"))]


def _phases(results: list[dict]) -> str:
    """Medians of Harbor's per-trial phase timings."""
    parts = []
    for name in ("environment_setup", "agent_setup", "agent_execution", "verifier", None):
        values = [v for r in results if (v := _seconds(r.get(name) if name else r)) is not None]
        if values:
            parts.append(f"{name or 'whole trial'} {statistics.median(values):.2f} s")
    return ", ".join(parts)


def _window(results: list[dict]) -> tuple[float, float]:
    """Epoch seconds of the first trial's start and of the last trial's end."""
    starts = [datetime.fromisoformat(r["started_at"]).timestamp() for r in results]
    ends = [datetime.fromisoformat(r["finished_at"]).timestamp() for r in results]
    return min(starts), max(ends)


def _direct(
    configs: dict[str, dict], out: Path, name: str, harbor: Path, cli: list[str],
    env: dict[str, str], skills: Path,
) -> tuple[float, list[dict]]:  # fmt: skip
    """Job files given to `harbor run` at once, then `import harbor`; (wall s, trial results)."""
    jobs = out / name
    procs = []
    start = time.monotonic()
    for job, config in configs.items():
        config = {**config, "jobs_dir": str(jobs)}
        path = out / f"{name}-{job}.json"
        path.write_text(json.dumps(config))
        procs.append(subprocess.Popen([str(harbor), "run", "-c", str(path), "-y"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
    if any(p.wait() for p in procs):
        sys.exit(f"harbor run failed in the {name} mode")
    arms = (["--job", str(jobs / "both")] if "both" in configs else
            ["--with-skills", str(jobs / "se"), "--without-skills", str(jobs / "sd")])  # fmt: skip
    subprocess.run([*cli, "import", "harbor", *arms, "--skills", str(skills),
                    "-o", str(out / f"{name}-runs")], env=env, check=True, capture_output=True)  # fmt: skip
    return time.monotonic() - start, _trials(jobs)


def _split(both: dict) -> dict[str, dict]:
    """The one job of both arms as the two jobs of before 5 Dec 2026: one agent entry each,
    half of the trial slots each."""
    half = max(1, both["n_concurrent_trials"] // 2)
    return {arm: {**both, "job_name": arm, "agents": [agent], "n_concurrent_trials": half}
            for arm, agent in zip(("se", "sd"), both["agents"], strict=True)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per request")
    parser.add_argument("--slots", type=int, default=8, help="requests served at once")
    parser.add_argument("--two-jobs", action="store_true",
                        help="also run the two-job layout of before 5 Dec 2026, directly")  # fmt: skip
    args = parser.parse_args()
    harbor = ROOT / ".venv-harbor" / "bin" / "harbor"
    cli = [sys.executable, "-m", "hf_skillfollow.cli"]
    env = {**os.environ, "SKILLFOLLOW_HARBOR": str(harbor), "DOUBLE_API_KEY": "double-key",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HARBOR_TELEMETRY": "0"}  # fmt: skip
    load_before = os.getloadavg()
    n_trials = 2 * 4 * args.trials
    walls: dict[str, float] = {}
    windows: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        LimitedDouble(DATA / "tasks", args.slots, args.latency) as model,
    ):
        out = Path(tmp)
        ours_began = time.time()
        walls["ours"] = _timed([*cli, "run", "--harness", "harbor", "--model", "openai/double-model",
                                "--base-url", model.url, "--api-key-env", "DOUBLE_API_KEY",
                                "--trials", str(args.trials), "--concurrency", str(args.concurrency),
                                "-o", str(out / "ours"), "--no-report"], env)  # fmt: skip
        requests = sum(model.requests.values())
        (work,) = (out / "ours").glob("harbor-*")
        results = _trials(work / "jobs")
        configs = {p.stem: json.loads(p.read_text()) for p in sorted(work.glob("*.json"))}
        modes = {"direct": configs}
        if args.two_jobs and "both" in configs:
            modes["two jobs"] = _split(configs["both"])
        for name, mode in modes.items():
            walls[name], mode_results = _direct(mode, out, name.replace(" ", "-"), harbor, cli,
                                                env, work / "skills")  # fmt: skip
            if len(mode_results) != n_trials or any(r.get("exception_info") for r in mode_results):
                sys.exit(f"{name}: {len(mode_results)} trial results, some with an exception")
            first, last = _window(mode_results)
            windows[name] = last - first
    load_after = os.getloadavg()
    if len(results) != n_trials or any(r.get("exception_info") for r in results):
        sys.exit(f"ours: {len(results)} trial results, some with an exception: not a measurement")
    requests_per_trial = requests / n_trials
    limit_rpm = args.slots * 60 / args.latency
    limit_tpm = limit_rpm / requests_per_trial
    first, last = _window(results)
    windows["ours"] = last - first
    layout = "one job of both arms" if "both" in configs else "two jobs"
    print(f"ours ran {', '.join(configs)} ({layout})")
    print(f"endpoint: {args.slots} slots x {args.latency:.1f} s -> {limit_rpm:.0f} requests/min; "
          f"{requests_per_trial:.2f} requests per trial -> limit {limit_tpm:.1f} trials/min")  # fmt: skip
    print(f"{'mode':9} {'wall s':>7} {'trials/min':>11} {'x limit: whole run':>19} "
          f"{'window s':>9} {'x limit: window':>16}")  # fmt: skip
    for name, wall in walls.items():
        rate = n_trials * 60 / wall
        print(f"{name:9} {wall:7.1f} {rate:11.1f} {rate / limit_tpm:18.2f}x {windows[name]:9.1f} "
              f"{(n_trials * 60 / windows[name]) / limit_tpm:15.2f}x")  # fmt: skip
    # a trial's own time: the direct run's wall time shared over the trials in flight
    direct = walls["direct"]
    trial_s = direct * min(args.concurrency, n_trials) / n_trials
    overhead = (walls["ours"] - direct) / n_trials
    print(f"overhead of ours: {overhead:+.2f} s per trial = {100 * overhead / trial_s:+.1f}% of a "
          f"trial's ~{trial_s:.1f} s (target < 5%); {100 * (walls['ours'] - direct) / direct:+.1f}% "
          "of the whole run")  # fmt: skip
    print(f"ours outside the jobs' window: {first - ours_began:.1f} s before the first trial "
          f"started (staging, Harbor's start), {ours_began + walls['ours'] - last:.1f} s after "
          "the last ended (Harbor's end, the import)")  # fmt: skip
    busy = sum(_seconds(r) or 0.0 for r in results)
    print(f"a trial of ours (medians): {_phases(results)}; {busy / windows['ours']:.1f} trials in "
          f"flight on average over the window (of {args.concurrency})")  # fmt: skip
    print(f"load average (1, 5, 15 min): before {', '.join(f'{x:.1f}' for x in load_before)}; "
          f"after {', '.join(f'{x:.1f}' for x in load_after)} (on {os.cpu_count()} cores)")  # fmt: skip


if __name__ == "__main__":
    main()
