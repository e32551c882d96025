"""Post-hoc diagnosis of why retrieval helped or hurt (docs/diagnostics.md).

A blinded LLM annotator labels retrieval-invoked SE executions; the labels are reported next
to RAE and never feed back into it. Heavy imports happen inside the functions that need them.
"""

from hf_skillfollow.annotate._labels import ENGAGED_LABELS, GROUP_OF, GROUPS, LABELS, engaged

__all__ = ["ENGAGED_LABELS", "GROUPS", "GROUP_OF", "LABELS", "engaged"]
