"""BM25 retrieval with Lucene semantics: analyzer, length norm, scores and hit selection.

Expected analyzer outputs were taken from Lucene 9.9.1 (Anserini's DefaultEnglishAnalyzer);
BM25 expectations are computed here from the formula, independently of the code under test.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hf_skillfollow.retrieval import make_retriever
from hf_skillfollow.retrieval._analyzer import ENGLISH_STOP_WORDS, analyze, standard_tokenize
from hf_skillfollow.retrieval._bm25s import Bm25sRetriever
from hf_skillfollow.retrieval._lucene_norm import byte4_to_int, int_to_byte4, lucene_length
from hf_skillfollow.retrieval._porter import porter_stem
from hf_skillfollow.skills import load_pool


def make_pool(
    root: Path, docs: dict[str, tuple[str, str, str]]
):  # name -> (type, description, body)
    for name, (kind, description, body) in docs.items():
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {description}\ntype: {kind}\n---\n{body}\n"
        )
    return load_pool(root)


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("The city's runners were RUNNING quickly", ["citi", "runner", "were", "run", "quickli"]),
        (
            "don't foo:bar 3.14 1,000 snake_case __init__ __ U.S.A. e.g. as us is",
            ["don't", "foo:bar", "3.14", "1,000", "snake_cas", "__init__", "u.s.a", "e.g", "us"],
        ),
        ("Bob’s x's THE Node's", ["bob", "x", "node"]),
        ("f(x)=x^2+3x; a_i <= b[i]", ["f", "x", "x", "2", "3x", "a_i", "b", "i"]),
        ("grokking analogy flexibly generalization", ["grok", "analog", "flexibl", "gener"]),
    ],
)
def test_analyzer_matches_recorded_lucene_output(text: str, terms: list[str]) -> None:
    assert analyze(text) == terms


def test_stop_set_is_lucenes_33_words() -> None:
    assert len(ENGLISH_STOP_WORDS) == 33 and {"the", "with", "such", "will"} <= ENGLISH_STOP_WORDS
    assert "from" not in ENGLISH_STOP_WORDS


def test_long_tokens_are_chopped_at_255() -> None:
    assert [len(t) for t in standard_tokenize("a" * 600 + " b")] == [255, 255, 90, 1]


def test_porter_leaves_two_letter_words_and_follows_lucene() -> None:
    assert [porter_stem(w) for w in ("us", "as", "is")] == ["us", "as", "is"]
    # Lucene departs from Snowball "porter" on these (Snowball: analogi, grokk, feasibli).
    assert [porter_stem(w) for w in ("analogy", "grokking", "feasibly", "caresses", "ponies")] == [
        "analog",
        "grok",
        "feasibl",
        "caress",
        "poni",
    ]


@pytest.mark.parametrize(
    ("length", "decoded"),
    [(0, 0), (23, 23), (24, 24), (31, 31), (32, 32), (40, 40), (41, 40), (100, 96), (1000, 984)],
)
def test_lucene_length_norm(length: int, decoded: int) -> None:
    assert lucene_length(length) == decoded


def test_smallfloat_byte_range() -> None:
    assert int_to_byte4(2**31 - 1) == 255 and byte4_to_int(0) == 0
    with pytest.raises(ValueError, match="length must be >= 0"):
        int_to_byte4(-1)


def _bm25(tf: int, df: int, n: int, length: int, avgdl: float) -> float:
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + 0.9 * (0.6 + 0.4 * length / avgdl))


def test_scores_follow_lucene_bm25_with_lossy_norm(tmp_path: Path) -> None:
    filler = " ".join(f"q{i}" for i in range(40))
    pool = make_pool(tmp_path, {
        "a": ("utility", "zebra koala", "panda"),
        "b": ("utility", "zebra zebra", "lemur"),
        "c": ("procedure", "koala", filler),  # 41 terms: Lucene scores it as 40
    })  # fmt: skip
    retriever = Bm25sRetriever(pool)
    avgdl = 47 / 3
    zebra = retriever.search("zebra", k=3)
    assert [h.name for h in zebra] == ["b", "a"]  # c has no zebra: zero score dropped
    assert zebra[0].score == pytest.approx(_bm25(2, 2, 3, 3, avgdl), rel=1e-6)
    assert zebra[1].score == pytest.approx(_bm25(1, 2, 3, 3, avgdl), rel=1e-6)
    koala_c = next(h.score for h in retriever.search("koala") if h.name == "c")
    assert koala_c == pytest.approx(_bm25(1, 2, 3, 40, avgdl), rel=1e-6)
    assert koala_c != pytest.approx(_bm25(1, 2, 3, 41, avgdl), rel=1e-4)
    # A repeated query term counts twice, as in Anserini's bag-of-words query.
    assert retriever.search("panda panda")[0].score == pytest.approx(
        2 * _bm25(1, 1, 3, 3, avgdl), rel=1e-6
    )


def test_ties_type_filter_and_empty_queries(tmp_path: Path) -> None:
    pool = make_pool(tmp_path, {
        "twin-b": ("utility", "binary search", "sorted array boundary"),
        "twin-a": ("utility", "binary search", "sorted array boundary"),
        "guard-1": ("guard", "check the array", "empty input"),
        "other": ("procedure", "graph", "depth first"),
    })  # fmt: skip
    retriever = make_retriever("bm25s", pool)
    hits = retriever.search("binary search sorted array", k=3)
    assert [h.name for h in hits] == ["twin-a", "twin-b", "guard-1"]
    assert hits[0].score == hits[1].score > hits[2].score > 0
    assert [
        h.name for h in retriever.search("binary search sorted array", k=1, types=["guard"])
    ] == ["guard-1"]
    assert [h.name for h in retriever.search("array", k=5, types=["procedure"])] == []
    assert (
        retriever.search("") == []
        and retriever.search("the and of") == []
        and retriever.search("zzz") == []
    )
    with pytest.raises(ValueError, match="unknown skill type"):
        retriever.search("array", types=["recipe"])
    with pytest.raises(ValueError, match="k: must be >= 1"):
        retriever.search("array", k=0)


def test_unknown_retriever_is_named() -> None:
    with pytest.raises(ValueError, match="unknown retriever 'lucene'"):
        make_retriever("lucene", load_pool("coding"))


@pytest.mark.parametrize(
    ("pool", "query", "top"),
    [
        (
            "coding",
            "Write a function to find the length of the longest substring without repeating characters.",
            "sliding-window-longest",
        ),
        (
            "coding",
            "Write a function to rotate a given list by specified number of items to the left direction.",
            "rotate-left",
        ),
        ("math", "What is the remainder when 7^{100} is divided by 5?", "modular-arithmetic"),
        ("math", "Find the distance between the points (1, 2) and (7, 10).", "coordinate-distance"),
    ],
)
def test_shipped_pools_rank_the_obvious_skill_first(pool: str, query: str, top: str) -> None:
    assert make_retriever("bm25s", load_pool(pool)).search(query)[0].name == top
