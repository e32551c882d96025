"""Benchmark: `hf-skillfollow score` vs `evalplus.evaluate` on every MBPP+ canonical solution.

Both run as their CLIs, with 2 workers, on the same samples file, side by side in one run:
- cold: empty caches (EvalPlus computes its ground-truth pickle; we compute expected outputs
  per task in the sandbox),
- warm: caches filled; ours repeated ``--repeats`` times to count verdict flips.
Prints wall times, the speed ratio, verdict agreement and stability. Target: >= 2x faster,
zero flips.

    python bench/score.py [--data-dir ../shared/data] [--repeats 3] [--no-cold]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _data_file(data_dir: str | None) -> Path:
    base = Path(
        data_dir or os.environ.get("SKILLFOLLOW_DATA_DIR") or REPO.parent / "shared" / "data"
    )
    path = base / "mbppplus-v0.1.0.jsonl"
    if not path.is_file():
        sys.exit(f"MBPP+ data not found: {path} (pass --data-dir or set SKILLFOLLOW_DATA_DIR)")
    return path


def _write_samples(data: Path, path: Path) -> list[str]:
    ids = []
    with path.open("w") as fh:
        for line in data.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                fh.write(
                    json.dumps(
                        {
                            "task_id": row["task_id"],
                            "solution": row["prompt"] + row["canonical_solution"],
                        }
                    )
                    + "\n"
                )
                ids.append(row["task_id"])
    return ids


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return elapsed


def run_evalplus(data: Path, work: Path, cache: Path, name: str) -> tuple[float, dict[str, bool]]:
    samples = work / f"evalplus-{name}.jsonl"
    shutil.copy(work / "samples.jsonl", samples)  # a fresh path: EvalPlus reuses old result files
    env = {**os.environ, "MBPP_OVERRIDE_PATH": str(data), "XDG_CACHE_HOME": str(cache)}
    cmd = [
        sys.executable,
        "-m",
        "evalplus.evaluate",
        "--dataset",
        "mbpp",
        "--samples",
        str(samples),
        "--parallel",
        "2",
    ]
    seconds = _timed(cmd, env)
    results = json.loads((work / f"evalplus-{name}_eval_results.json").read_text())["eval"]
    return seconds, {
        t: r[0]["base_status"] == "pass" and r[0]["plus_status"] == "pass"
        for t, r in results.items()
    }


def run_ours(data: Path, work: Path, cache: Path, name: str) -> tuple[float, dict[str, bool]]:
    out = work / f"ours-{name}.jsonl"
    env = {**os.environ, "SKILLFOLLOW_CACHE_DIR": str(cache)}
    cmd = [
        sys.executable,
        "-m",
        "hf_skillfollow.cli",
        "score",
        "--benchmark",
        "mbppplus",
        "--samples",
        str(work / "samples.jsonl"),
        "--output",
        str(out),
        "--tasks-file",
        str(data),
        "--workers",
        "2",
    ]
    seconds = _timed(cmd, env)
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    return seconds, {v["task_id"]: v["passed"] for v in verdicts}


def _report(
    ids: list[str],
    times: dict[str, float],
    evalplus: dict[str, dict[str, bool]],
    ours: dict[str, dict[str, bool]],
) -> None:
    print(
        f"\nMBPP+ v0.1.0 canonical solutions: {len(ids)} tasks, 2 workers each, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'run':<24}{'wall s':>10}{'passed':>10}")
    for name, seconds in times.items():
        verdicts = (
            evalplus.get(name.removeprefix("evalplus "))
            if name.startswith("evalplus")
            else ours[name.removeprefix("ours ")]
        )
        print(f"{name:<24}{seconds:>10.1f}{sum(verdicts.values()):>7}/{len(verdicts)}")
    for phase in ("cold", "warm"):
        e, o = (
            times.get(f"evalplus {phase}"),
            times.get(f"ours {phase}") or times.get(f"ours {phase}-1"),
        )
        if e and o:
            print(f"speed-up {phase}: evalplus / ours = {e / o:.2f}x")
    first = next(iter(ours.values()))
    for name, verdicts in evalplus.items():
        differ = sorted(
            (t for t in ids if verdicts.get(t) != first.get(t)), key=lambda t: int(t.split("/")[1])
        )
        print(
            f"agreement with evalplus {name}: {len(ids) - len(differ)}/{len(ids)}; differ: "
            + (
                ", ".join(f"{t} (evalplus {verdicts.get(t)}, ours {first.get(t)})" for t in differ)
                or "none"
            )
        )
    flips = [t for t in ids if len({v[t] for v in ours.values()}) > 1]
    print(
        f"our verdict flips over {len(ours)} runs: {len(flips)}"
        + (f" ({', '.join(flips)})" if flips else "")
    )
    e_runs = list(evalplus.values())
    if len(e_runs) > 1:
        e_flips = [t for t in ids if len({v.get(t) for v in e_runs}) > 1]
        print(
            f"evalplus verdict flips over {len(e_runs)} runs: {len(e_flips)}"
            + (f" ({', '.join(e_flips)})" if e_flips else "")
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir")
    parser.add_argument("--repeats", type=int, default=3, help="warm repeats of our scorer")
    parser.add_argument(
        "--no-cold",
        action="store_true",
        help="skip the timed cold runs (caches are filled untimed)",
    )
    args = parser.parse_args()
    data = _data_file(args.data_dir)
    with tempfile.TemporaryDirectory(prefix="bench-score-") as tmp:
        work = Path(tmp)
        ids = _write_samples(data, work / "samples.jsonl")
        times: dict[str, float] = {}
        evalplus: dict[str, dict[str, bool]] = {}
        ours: dict[str, dict[str, bool]] = {}
        phases = ["warm"] if args.no_cold else ["cold", "warm"]
        if args.no_cold:
            # "warm" means caches filled: fill both, untimed, so the first timed run is warm too.
            run_evalplus(data, work, work / "evalplus-cache", "fill")
            run_ours(data, work, work / "our-cache", "fill")
        for phase in phases:
            times[f"evalplus {phase}"], evalplus[phase] = run_evalplus(
                data, work, work / "evalplus-cache", phase
            )
            print(f"evalplus {phase}: {times[f'evalplus {phase}']:.1f} s", flush=True)
            repeats = 1 if phase == "cold" else args.repeats
            for r in range(1, repeats + 1):
                name = phase if repeats == 1 else f"{phase}-{r}"
                times[f"ours {name}"], ours[name] = run_ours(data, work, work / "our-cache", name)
                print(f"ours {name}: {times[f'ours {name}']:.1f} s", flush=True)
        _report(ids, times, evalplus, ours)


if __name__ == "__main__":
    main()
