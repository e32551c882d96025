"""Skill-content controls (docs/design.md, "Protocol"): what the model reads for each condition."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from hf_skillfollow.retrieval._base import Hit
from hf_skillfollow.skill_content import (
    CONDITIONS,
    NO_RESULTS,
    corrupt_text,
    render_hits,
    returned_names,
)
from hf_skillfollow.skills import SkillPool, load_pool

BODIES = {
    "alpha-window": "Keep left <= right and move left when the window is invalid.\n\n```python\nwhile left <= right:\n    best = max(best, right - left + 1)\n```",
    "beta-search": "Search the sorted array in ascending order; return the first index.\n\n```python\nif a[mid] < x:\n    lo = mid + 1\n```",
    "gamma-count": "Count items with a dictionary. The smallest even key wins.",
    "delta-guard": "Check for empty input before anything else; return True when done.",
    "eps-plain": "Plain prose about graphs and nodes with nothing to swap.",
}


@pytest.fixture()
def pool(tmp_path: Path) -> SkillPool:
    for name, body in BODIES.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: About {name}.\ntype: procedure\n---\n{body}\n"
        )
    return load_pool(tmp_path)


HITS = [Hit("beta-search", 3.0), Hit("alpha-window", 2.0)]


def test_normal_returns_full_skill_files_in_hit_order(pool: SkillPool) -> None:
    text = render_hits(pool, HITS, "normal", rng_seed=0)
    beta, alpha = pool.get("beta-search").text, pool.get("alpha-window").text
    assert beta.strip() in text and alpha.strip() in text
    assert text.index("name: beta-search") < text.index("name: alpha-window")
    assert text.startswith("Found 2 skills.") and "=== Skill 1/2: beta-search ===" in text
    assert returned_names(pool, HITS, "normal") == ["beta-search", "alpha-window"]


def test_no_hits_and_schema_empty_return_nothing(pool: SkillPool) -> None:
    for condition in CONDITIONS:
        assert render_hits(pool, [], condition) == NO_RESULTS
        assert returned_names(pool, [], condition) == []
    assert render_hits(pool, HITS, "schema-empty") == NO_RESULTS
    assert returned_names(pool, HITS, "schema-empty") == []


def test_filler_matches_length_and_carries_no_skill_text(pool: SkillPool) -> None:
    normal = render_hits(pool, HITS, "normal")
    filler = render_hits(pool, HITS, "filler", rng_seed=7)
    assert len(filler) == len(normal)
    *words, last = filler.split()
    vocabulary = set(
        [
            "lorem",
            "ipsum",
            "dolor",
            "sit",
            "amet",
            "consectetur",
            "adipiscing",
            "elit",
            "sed",
            "do",
            "eiusmod",
            "tempor",
            "incididunt",
            "ut",
            "labore",
            "et",
            "dolore",
            "magna",
            "aliqua",
            "enim",
            "ad",
            "minim",
            "veniam",
            "quis",
            "nostrud",
            "exercitation",
            "ullamco",
            "laboris",
            "nisi",
            "aliquip",
            "ex",
            "ea",
            "commodo",
            "consequat",
            "duis",
            "aute",
            "irure",
            "in",
            "reprehenderit",
            "voluptate",
            "velit",
            "esse",
            "cillum",
            "fugiat",
            "nulla",
            "pariatur",
            "excepteur",
            "sint",
            "occaecat",
            "cupidatat",
            "non",
            "proident",
            "sunt",
            "culpa",
            "qui",
            "officia",
            "deserunt",
            "mollit",
            "anim",
            "id",
            "est",
            "laborum",
        ]
    )
    assert set(words) <= vocabulary and any(
        w.startswith(last) for w in vocabulary
    )  # last word may be cut
    assert (
        filler
        == render_hits(pool, HITS, "filler", rng_seed=7)
        != render_hits(pool, HITS, "filler", rng_seed=8)
    )
    assert returned_names(pool, HITS, "filler") == ["beta-search", "alpha-window"]


def test_random_draws_other_skills_uniformly_and_reproducibly(pool: SkillPool) -> None:
    names = returned_names(pool, HITS, "random", rng_seed=3)
    assert (
        len(names) == 2
        and len(set(names)) == 2
        and not set(names) & {"beta-search", "alpha-window"}
    )
    text = render_hits(pool, HITS, "random", rng_seed=3)
    assert all(pool.get(n).text.strip() in text for n in names) and "name: beta-search" not in text
    assert names == returned_names(pool, HITS, "random", rng_seed=3)
    counts = Counter(
        n for seed in range(3000) for n in returned_names(pool, HITS, "random", rng_seed=seed)
    )
    # 3 others, 2 draws each time: 2000 expected each; binomial sd ~26.
    assert set(counts) == {"gamma-count", "delta-guard", "eps-plain"}
    assert all(abs(c - 2000) < 150 for c in counts.values())


def test_random_falls_back_to_whole_pool_when_too_few_others(pool: SkillPool) -> None:
    hits = [Hit(n, 1.0) for n in ("alpha-window", "beta-search", "gamma-count", "delta-guard")]
    names = returned_names(pool, hits, "random", rng_seed=1)
    assert len(names) == 4 and len(set(names)) == 4 and set(names) <= set(pool.names)


def test_corrupted_swaps_operators_and_directions(pool: SkillPool) -> None:
    text = render_hits(pool, HITS, "corrupted", rng_seed=0)
    assert "while right >= left:" in text and "while left <= right:" not in text
    assert "best = min(best, left + right - 1)" in text  # was max(best, right - left + 1)
    assert "if a[mid] > x:" in text and "descending order; return the last index" in text
    assert "name: alpha-window\ndescription: About alpha-window." in text  # front matter intact
    assert text == render_hits(pool, HITS, "corrupted", rng_seed=99)  # no randomness
    assert returned_names(pool, HITS, "corrupted") == ["beta-search", "alpha-window"]


def test_corrupt_text_cases() -> None:
    assert (
        corrupt_text("Smallest EVEN first; x == 1 and True") == "Largest ODD last; x != 1 and False"
    )
    assert corrupt_text("i += 1 if a >= b") == "i -= 1 if a <= b"
    plain = "Plain prose about graphs."
    assert corrupt_text(plain).startswith(plain) and "off by one" in corrupt_text(plain)


def test_metadata_only_has_descriptions_not_bodies(pool: SkillPool) -> None:
    text = render_hits(pool, HITS, "metadata-only")
    assert "Description: About beta-search." in text and "Description: About alpha-window." in text
    assert "ascending" not in text and "while left" not in text
    assert returned_names(pool, HITS, "metadata-only") == ["beta-search", "alpha-window"]


def test_unknown_condition_is_named(pool: SkillPool) -> None:
    with pytest.raises(ValueError, match="unknown skill-content condition 'noisy'"):
        render_hits(pool, HITS, "noisy")


def test_every_shipped_skill_is_changed_by_corruption() -> None:
    for name in ("coding", "math"):
        for skill in load_pool(name).skills:
            assert corrupt_text(skill.body) != skill.body
