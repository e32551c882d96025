"""The peer for bench/space.py: a bare Gradio app showing the same cells the board first shows.

It reads cell rows that the bench computed beforehand (so it does no metric work), shows the
first `--rows` rows with n_cond >= the threshold in a plain `gr.Dataframe`, and re-filters
when the threshold radio changes. Started exactly like the board: `python FILE ARGS`.
"""

from __future__ import annotations

import argparse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cells", help="parquet file of cell rows (written by bench/space.py)")
    ap.add_argument("--port", type=int, required=True, help="port to serve on")
    ap.add_argument("--rows", type=int, required=True, help="rows to show (as many as the board)")
    args = ap.parse_args()

    import gradio as gr
    import pandas as pd

    cells = pd.read_parquet(args.cells)

    def view(threshold: str) -> pd.DataFrame:
        return cells[cells["n_cond"] >= int(threshold)].head(args.rows)

    with gr.Blocks(title="bare") as demo:
        radio = gr.Radio(["5", "10", "15", "20"], value="10", label="min n_cond", elem_id="bare-t")
        table = gr.Dataframe(view("10"), interactive=False, elem_id="bare-table")
        radio.change(view, radio, table, api_name="refresh", trigger_mode="always_last")
    demo.launch(server_port=args.port, server_name="127.0.0.1")


if __name__ == "__main__":
    main()
