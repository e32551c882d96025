"""Sweep executors, chosen by name through `registries.EXECUTORS`: `local` (this process) and
`ray` (a Ray cluster; the optional `ray` extra)."""
