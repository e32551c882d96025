"""Parity of the default bm25s retriever with real Lucene (Anserini through pyjnius).

Needs the Pyserini option (`pip install --no-deps -r requirements-pyserini.txt`); CI installs
it, and without it these tests fail rather than skip. One JVM serves the whole module.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from hf_skillfollow.retrieval._analyzer import analyze
from hf_skillfollow.retrieval._bm25s import Bm25sRetriever
from hf_skillfollow.retrieval._jvm import jvm
from hf_skillfollow.retrieval._lucene_norm import lucene_length
from hf_skillfollow.retrieval._pyserini import PyseriniRetriever
from hf_skillfollow.skills import index_text, load_pool, merged_pool

CODING_QUERIES = [
    "Write a function to find the length of the longest substring without repeating characters.",
    "Write a python function to find the first non-repeated character in a given string.",
    "Write a function to rotate a given list by specified number of items to the left direction.",
    "Write a function to find the maximum sum of a contiguous subarray of size k.",
    "Write a function to find two numbers in a sorted array that add up to a target sum.",
    "Write a function to count the number of pairs whose sum is equal to 'sum'.",
    "Write a python function to find the index of the first occurrence of a given number in a sorted array.",
    "Write a function to solve the 0-1 knapsack problem given weights, values and capacity.",
    "Write a function to find all connected components of an undirected graph using depth first search.",
    "Write a function to check whether a path exists between two nodes of a graph.",
    "Write a function to compute the sum of elements between indices i and j for many queries.",
    "Write a python function to count the frequency of each element in a list.",
    "Write a function to find the most common word in a paragraph.",
    "Write a function to check if two strings are anagrams of each other.",
    "Write a python function to find the smallest missing positive number from an unsorted array.",
    "Write a function that returns the square root of n rounded down using binary search.",
    "Write a function to find the minimum number of coins needed to make a given value.",
    "Write a function to handle an empty list and return None when the input is empty.",
    "Write a function to remove duplicates from a list while preserving order.",
    "Write a python function to left rotate the bits of a given number.",
    "Write a function to find the longest subarray with sum at most k.",
    "Write a function to find the equilibrium index of an array.",
    "Write a function to count subarrays whose sum equals k.",
    "Write a function to perform an iterative depth-first traversal of a tree without recursion.",
    "Write a function to find the number of islands in a 2D grid.",
    "Write a function to find the insertion point for a specified value in sorted order.",
    "Write a function to find whether a given list contains three elements whose sum is zero.",
    "Write a function to reverse the words in a string.",
    "Write a function to find the maximum value that can be put in a knapsack of capacity W.",
    "Write a python function to check whether the given number is even or not.",
    "Write a function to merge two sorted lists into one sorted list.",
    "Write a function to find the kth smallest element in a matrix sorted by rows and columns.",
    "Write a function to find the longest common prefix of a list of strings.",
    "two pointer pair sum",
    "sliding window",
    "edge cases: empty input, single element, negative numbers",
]

MATH_QUERIES = [
    "What is the remainder when 7^{100} is divided by 5?",
    "Find the distance between the points (1, 2) and (7, 10).",
    "Solve for x: x^4 - 5x^2 + 4 = 0.",
    "How many positive divisors does 360 have?",
    "Find the sum of the first 50 terms of the arithmetic sequence 3, 7, 11, ...",
    "Solve |2x - 3| = 7 and find the sum of all solutions.",
    "Find all real solutions to sqrt(x + 7) = x - 5.",
    "Find the sum of the infinite geometric series 1 + 1/3 + 1/9 + ...",
    "What is the last digit of 3^{2023}?",
    "Factor the polynomial x^3 - 6x^2 + 11x - 6 and find its roots.",
    "How many ways can 5 identical balls be put into 3 distinct boxes?",
    "Find the midpoint of the segment with endpoints (-4, 6) and (8, -2).",
    "If x + 1/x = 5, find x^2 + 1/x^2.",
    "Find the area of the triangle with vertices (0,0), (4,0), and (1,5).",
    "Solve the congruence 3x = 4 (mod 7).",
    "Find the center and radius of the circle x^2 + 4x + y^2 - 6y = 12.",
    "What is the probability of rolling a sum of 7 with two fair dice?",
    "How many integers from 1 to 1000 are divisible by 3 or 5?",
    "Find the positive integer solutions of xy + 2x + 3y = 30.",
    "For which values of x is (x - 2)/(x + 3) > 0?",
    "The sum of the roots of 2x^2 - 8x + 3 = 0 is what?",
    "Find the 20th term of the geometric sequence 2, 6, 18, ...",
    "Evaluate the telescoping sum 1/(1*2) + 1/(2*3) + ... + 1/(99*100).",
    "Solve 4^x - 3 * 2^x - 4 = 0.",
    "Find the distance from the point (3, 4) to the line 3x + 4y - 5 = 0.",
    "What is the slope of the line through (2, 3) and (5, 11)?",
    "Solve the equation log_2(x) + log_2(x - 2) = 3.",
    "Find the smallest positive integer that leaves remainder 2 when divided by 3, 4 and 5.",
    "How many 3-digit numbers have digits that sum to 10?",
    "Solve x^2 - 5x + 6 = 0 and check each root.",
    "Find floor(x) such that x + floor(x) = 7.5.",
    "Find the sum of the squares of the first 10 positive integers.",
    "check by substitution extraneous roots",
    "case analysis absolute value inequality",
]


@pytest.fixture(scope="module", params=["coding", "math"])
def backends(request: pytest.FixtureRequest):
    pool = load_pool(request.param)
    lucene = PyseriniRetriever(pool)
    yield pool, Bm25sRetriever(pool), lucene
    lucene.close()


def _queries(pool_name: str) -> list[str]:
    return CODING_QUERIES if pool_name == "coding" else MATH_QUERIES


def test_enough_queries() -> None:
    assert len(set(CODING_QUERIES)) >= 30 and len(set(MATH_QUERIES)) >= 30


def test_top3_and_scores_match_lucene(backends) -> None:
    pool, ours, lucene = backends
    full = 0
    for query in _queries(pool.name):
        expected, got = lucene.search(query, k=3), ours.search(query, k=3)
        assert [h.name for h in got] == [h.name for h in expected], query
        np.testing.assert_allclose(
            [h.score for h in got], [h.score for h in expected], rtol=1e-4, err_msg=query
        )
        # Every skill's score, not only the top 3.
        np.testing.assert_allclose(
            ours.scores(query), lucene.scores(query), rtol=1e-4, err_msg=query
        )
        full += len(expected) == 3
    assert (
        full >= 30
    )  # at least 30 queries per pool fill all three slots: the comparison is not vacuous


def test_type_filter_matches_lucene(backends) -> None:
    pool, ours, lucene = backends
    for types in (["utility"], ["procedure"], ["guard"], ["utility", "guard"]):
        for query in _queries(pool.name)[:10]:
            expected, got = (
                lucene.search(query, k=3, types=types),
                ours.search(query, k=3, types=types),
            )
            assert [h.name for h in got] == [h.name for h in expected], (query, types)
            assert {pool.get(h.name).type for h in got} <= set(types)
            np.testing.assert_allclose(
                [h.score for h in got], [h.score for h in expected], rtol=1e-4
            )


def test_length_norm_is_exercised(backends) -> None:
    """Shipped skills are long: Lucene's lossy norm differs from the exact length for them,
    so matching scores above shows the norm emulation is right, not irrelevant."""
    pool, _, _ = backends
    lengths = [len(analyze(index_text(s))) for s in pool.skills]
    assert all(lucene_length(n) != n for n in lengths)


def test_merged_pool_parity() -> None:
    pool = merged_pool([load_pool("coding"), load_pool("math")])
    lucene = PyseriniRetriever(pool)
    ours = Bm25sRetriever(pool)
    for query in CODING_QUERIES[:10] + MATH_QUERIES[:10]:
        np.testing.assert_allclose(
            ours.scores(query), lucene.scores(query), rtol=1e-4, err_msg=query
        )
    lucene.close()


TRICKY = [
    "C++ vs C#: O(n log n) — 2.5e-3, 1,000,000; x_1...x_n; a.b.c; it's Bob’s 'quoted' word.",
    "naïve café résumé Straße ΣΑΣ İstanbul ﬁle ①②③ ½ x² √2 ≤ ≥ → ✓ ✔ ⚠️ 😀 中文 ひらがな カタカナ ไทย",
    "https://example.com/path?q=1&r=2 user@example.org #hashtag @mention 192.168.0.1 v1.2.3",
    "snake_case camelCase PascalCase kebab-case SCREAMING_CASE __dunder__ _private trailing_",
    "dp[i][j] = max(dp[i-1][j], dp[i-1][j-w[i]] + v[i]) if j >= w[i] else dp[i-1][j]",
]


def test_analyzer_matches_lucene_on_skills_queries_and_tricky_text() -> None:
    autoclass = jvm()
    analyzer = autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
    utils = autoclass("io.anserini.analysis.AnalyzerUtils")
    texts = [index_text(s) for p in ("coding", "math") for s in load_pool(p).skills]
    texts += CODING_QUERIES + MATH_QUERIES + TRICKY
    for text in texts:
        assert analyze(text) == list(utils.analyze(analyzer, text).toArray()), text[:80]


def test_porter_matches_lucene_on_a_vocabulary() -> None:
    """Words from the skills plus derived forms stress every Porter step."""
    autoclass = jvm()
    analyzer = autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
    utils = autoclass("io.anserini.analysis.AnalyzerUtils")
    base = {
        w.lower()
        for p in ("coding", "math")
        for s in load_pool(p).skills
        for w in re.findall(r"[A-Za-z]{3,}", s.text)
    }
    suffixes = (
        "",
        "s",
        "es",
        "ed",
        "ing",
        "ly",
        "ness",
        "ation",
        "ational",
        "izer",
        "ization",
        "ful",
        "ous",
        "ive",
        "iveness",
        "ement",
        "ity",
        "ible",
        "able",
        "ism",
        "al",
        "ence",
        "ance",
        "logy",
        "bly",
        "ies",
    )
    words = sorted({w + suf for w in base for suf in suffixes})
    for i in range(0, len(words), 2000):
        batch = " ".join(words[i : i + 2000])
        assert analyze(batch) == list(utils.analyze(analyzer, batch).toArray())
