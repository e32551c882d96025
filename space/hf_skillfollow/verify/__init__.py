"""Re-score what others published: re-extract each SE/SD answer from the traces, score it with
the recorded scorer and benchmark release, and compare with the published bits (docs/verify.md).

`_inputs` reads the rows, `_releases` finds the recorded releases, `_core` re-scores and
compares, `_state` makes it resumable, `_render` prints it, `_write` writes the record that
`_record` reads back, and `_status`/`_card` turn published records into the card's and the
Space's marks. The Space imports only `_status` and `_record`, so nothing that scores is
vendored into it.
"""
