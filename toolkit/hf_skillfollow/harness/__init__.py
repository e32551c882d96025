"""Paired runs of real agent harnesses (`run --harness NAME`, `registries.HARNESSES`).

A harness runs the skill-enabled and skill-disabled arms with another program's agent and
hands what it leaves to an importer, so everything after the run folder (report, push,
verify, board) is unchanged. docs/harness.md has the details.
"""
