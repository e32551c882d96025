"""Paired SE/SD metrics: pure computation over transitions rows, no I/O.

See docs/design.md, "Metrics".
"""

from hf_skillfollow.metrics._bootstrap import (
    SCHEME_VERSION,
    diff_cdf,
    paired_bootstrap_ci,
    percentile_levels,
)
from hf_skillfollow.metrics._counts import CellCounts, count_cells
from hf_skillfollow.metrics._effects import (
    Effect,
    accuracy_gap,
    delta_skip,
    oae,
    paired_effect,
    rae,
    share,
)
from hf_skillfollow.metrics._imported import (
    activation_unknown,
    imported_summary,
    imported_view,
    mark_unknown,
)
from hf_skillfollow.metrics._leaderboard import (
    COUNT_COLUMNS,
    MAX_ERROR_RATE,
    METRIC_COLUMNS,
    cell_counts,
    cell_intervals,
    compute_cells,
    compute_cells_from_counts,
    compute_cells_from_sums,
    disagreement_sensitivity,
)
from hf_skillfollow.metrics._mcnemar import mcnemar_exact
from hf_skillfollow.metrics._repeats import (
    TASK_CLASSES,
    classify,
    newcombe_interval,
    repeat_summary,
    repeat_variance,
    task_class_counts,
    task_intervals,
    wilson_interval,
)

__all__ = [
    "COUNT_COLUMNS",
    "MAX_ERROR_RATE",
    "METRIC_COLUMNS",
    "SCHEME_VERSION",
    "TASK_CLASSES",
    "CellCounts",
    "Effect",
    "accuracy_gap",
    "activation_unknown",
    "cell_counts",
    "cell_intervals",
    "classify",
    "compute_cells",
    "compute_cells_from_counts",
    "compute_cells_from_sums",
    "count_cells",
    "delta_skip",
    "diff_cdf",
    "disagreement_sensitivity",
    "imported_summary",
    "imported_view",
    "mark_unknown",
    "mcnemar_exact",
    "newcombe_interval",
    "oae",
    "paired_bootstrap_ci",
    "paired_effect",
    "percentile_levels",
    "rae",
    "repeat_summary",
    "repeat_variance",
    "share",
    "task_class_counts",
    "task_intervals",
    "wilson_interval",
]
