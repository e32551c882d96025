"""Text of the About tab."""

from __future__ import annotations

ABOUT_MD = """
## What this board measures

An LLM agent gets access to a library of procedural skills. Every task is run twice with the
same prompt, decoding settings and seed: **SE** (skill-enabled) and **SD** (skill-disabled,
no skill tool). Each task gives a pair of binary outcomes, summarised in a 2×2 table. How
the skills reach the model is the cell's *protocol*, said in words under "Pool / protocol":
the `search_skills(query)` tool (the retriever and top-k returned skills), or a skill
catalog in the SE prompt from which the model activates skills by name, as Agent Skills
clients do (there S_call is "a skill was activated"; no retriever is involved), or, for runs
imported from another harness, its loading mode. Cells measured under different protocols,
judges or task sets never pool.

| | SE correct | SE wrong |
|---|---|---|
| **SD correct** | a: concordant pass | c: harmful flip |
| **SD wrong** | b: helpful flip | d: concordant fail |

A **cell** is one model × benchmark × partition × skill pool/condition × protocol. Repeated,
config-identical runs of a cell are pooled by summing raw counts, then computing rates (the
"runs separately" toggle shows each run on its own). Runs are pooled only within the source
(results repo) that published them: each row names its source under the model, and nothing
one repo publishes (rows, re-scoring records, annotations, traces) changes another repo's
cells. *Show: sources pooled* pools config-identical runs across sources; the cell then names
every source it mixes, and a run two sources publish with different rows is left out and
named. Every number here is recomputed when the Space starts, from the published
`transitions` rows, with `hf_skillfollow.metrics`.

## The metrics (percentage points unless a count)

- **n** — paired tasks; **n_cond** — tasks where the SE run called a skill tool *and* at
  least one skill came back, by a search or an activation (the retrieval-invoked subset
  S_call).
- **Coverage** = 100·n_cond/n — the trigger rate.
- **RAE** (retrieval-invoked actual-use effect) = 100·(b − c)/n_cond over S_call, with a 95%
  percentile interval from a seeded paired multinomial bootstrap and an exact two-sided
  **McNemar p** on the discordant counts b and c (the table's b and c columns).
- **OAE** (overall skill-access effect) = 100·(b − c)/n over all tasks, with its interval.
- **Δskip** = the same contrast on the tasks outside S_call (omitted when there are none).
  Exactly: OAE = coverage·RAE + (1 − coverage)·Δskip (the drill-down shows the numbers).
- **Aggregate lift** = SE accuracy on retrieved tasks − SE accuracy on non-retrieved tasks.
- **Δselect** = SD accuracy on those same two task sets: how much easier the retrieved
  tasks were *without* any skill. Undefined (with agg lift) when retrieval happened on all
  or on no tasks.
- **Reportable** — n_cond at least the chosen threshold (10 by default; 5/10/15/20 offered so
  you can see how conclusions move), and not error-heavy.
- **Errored / error-heavy** — under n_cond / n, the share (and count) of pairs with an arm
  that ended in a provider error: its empty answer is scored wrong, so it measures the
  endpoint, not the skills. Over 5% of pairs the cell is *error-heavy*: flagged ⚠, never
  reportable, and its effects read "not reported: N% of pairs errored".
- **Sign disagreement ⚠** — a reportable cell whose aggregate lift and RAE have opposite
  signs. Cells with an undefined aggregate lift keep their RAE but are left out of
  disagreement counts.

## Judged cells

A maintainer's own tasks graded by expectations (`custom`, `skill-evals`) are judged by an
LLM: each row names its judge, and *self-judged* marks a model grading its own answers. The
judge grades each answer several times; a flip whose verdict one judge disagreement could
turn is *explainable* by judge noise. The row's noise badge counts them (`noise b 1/1 · c
3/3`), and when every flip is explainable the RAE is marked *≈ judge noise*: the cell does not
tell the skills' effect apart from the judge's. The drill-down shows each expectation's
statement, verdict, votes and evidence.

## Why aggregate lift misleads

Aggregate lift compares *different, self-selected* tasks: those where the agent chose to
retrieve against those where it did not. If the agent retrieves on the easy tasks (or the
hard ones), the lift mostly measures that difficulty gap — the selection gap **Δselect**,
which is visible in the SD run where no skill exists at all. The paired RAE compares each
task with itself, so selection cancels. The "Selection gap vs aggregate lift" plot shows
how closely the lift tracks Δselect; the "Aggregate lift vs RAE" plot shades the two
quadrants where the two numbers point in opposite directions.

## What RAE does not claim

RAE conditions on an event the SE run itself caused (the decision to retrieve, and a skill
coming back). It is a **protocol-specific paired signal**, not a causal effect of the skill:
the SD arm never faced the decision to retrieve, and the arms are coupled only through a
shared seed (they are independent runs). Read it together with the trigger rate (coverage),
the complementary contrast (Δskip) and OAE, and, when a cell has several runs, with the
run-to-run variation (toggle "runs separately").

## How to submit results

1. Install the toolkit from its source (it is not on PyPI yet: `pip install -e ".[local]"` in a
   checkout), then run the paired evaluation:
   `hf-skillfollow run --model <model> --backend openai --base-url <url> --benchmark mbppplus`.
2. Publish the run directory to a Hub dataset repo:
   `hf-skillfollow push runs/<run_id> --repo <you>/<results-repo>`. The repo gets a dataset
   card with the `transitions` and `traces` configs.
3. Tag the dataset **`skillfollow`** (the card written by `push` carries the tag). This board
   discovers tagged datasets when it starts; the Space owner can also list repos in the
   `SKILLFOLLOW_SOURCES` variable. Browse locally with `hf-skillfollow leaderboard <repo or folder>`.
"""

#: What a board with no rows shows instead of an empty table (a fresh Space, or every source failed).
EMPTY_MD = """
## No results to show yet

This board recomputes every number from the `transitions` rows of skillfollow results
datasets, and none could be loaded (the banner above says why, when a source failed).

- **Space owner:** set the Space variable `SKILLFOLLOW_SOURCES` to one or more results
  dataset repos, comma-separated (for example `my-org/skillfollow-results`), then restart
  the Space. Datasets tagged `skillfollow` on the Hub are also picked up when the Hub is
  reachable.
- **Submitter:** run `hf-skillfollow run ...`, then `hf-skillfollow push runs/<run_id> --repo
  <you>/<results-repo>`; the pushed dataset carries the `skillfollow` tag.
- **Locally:** `hf-skillfollow leaderboard runs/` browses run folders on your machine.

See the *About* tab for what the board measures.
"""
