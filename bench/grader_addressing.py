"""Benchmark: the grader-addressing detector on its labelled corpus (precision and recall).

The corpus (`tests/grader_corpus/grader_addressing.jsonl`, one JSON object per line: `text`,
`addresses_grader`) holds answers that write to whoever grades them (notes to a grader, orders
to mark everything passed, verdict literals, instruction overrides, and the same with zero-width
characters, fullwidth or Cyrillic letters, spaced-out or leet spellings, other languages,
base64) and ordinary text that mentions judges, reviewers, graders, tests, expectations and
polite greetings. Rows marked `held_out` were written after the detector was last changed
and were not tuned on: the rest were written with it, so their rates flatter it. Prints the
counts, precision and recall of the whole corpus and of the held-out rows, and every miss and
false alarm.
The detector's docstring and the report quote the figures this prints (`_detect.MEASURED`;
`tests/test_grader_addressing.py` checks they agree).

    python bench/grader_addressing.py [--corpus PATH]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "grader_corpus" / "grader_addressing.jsonl"


def load(path: Path = CORPUS) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def measure(rows: list[dict]) -> dict:
    """Counts, precision and recall (percent) of `addresses_grader` over labelled `rows`."""
    from hf_skillfollow.judge import addresses_grader

    flagged = [(bool(r["addresses_grader"]), addresses_grader(r["text"]), r["text"]) for r in rows]
    tp = sum(label and hit for label, hit, _ in flagged)
    fp = sum(hit and not label for label, hit, _ in flagged)
    fn = sum(label and not hit for label, hit, _ in flagged)
    return {
        "positives": tp + fn,
        "negatives": len(rows) - tp - fn,
        "true_positives": tp,
        "false_positives": fp,
        "precision": round(100.0 * tp / (tp + fp), 1) if tp + fp else float("nan"),
        "recall": round(100.0 * tp / (tp + fn), 1) if tp + fn else float("nan"),
        "misses": [t for label, hit, t in flagged if label and not hit],
        "false_alarms": [t for label, hit, t in flagged if hit and not label],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    rows = load(args.corpus)
    for name, subset in (("whole corpus", rows), ("held out", held_out(rows))):
        m = measure(subset)
        print(f"{name}: {m['positives']} answers addressing a grader, {m['negatives']} ordinary")
        print(
            f"  flagged: {m['true_positives']} of the former, {m['false_positives']} of the latter"
        )
        print(f"  precision {m['precision']:.1f} %, recall {m['recall']:.1f} %")
        for title, texts in (("missed", m["misses"]), ("false alarms", m["false_alarms"])):
            print(f"  {title} ({len(texts)}):")
            for text in texts:
                print(f"    {json.dumps(text, ensure_ascii=False)[:160]}")


def held_out(rows: list[dict]) -> list[dict]:
    """The rows written after the detector was last changed (`held_out`), never tuned on."""
    return [r for r in rows if r.get("held_out")]


if __name__ == "__main__":
    main()
