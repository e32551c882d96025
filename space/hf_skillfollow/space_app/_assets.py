"""The page's CSS and its one script (clicks on table, plots and task lists; URL state).

Colours come from Gradio's theme variables or `currentColor`, so light and dark mode both
read; the few fixed colours (flags, plot series) are chosen to read on either background.
Secondary text (intervals, sources, reasons) has its own colours, at least 4.5:1 (WCAG AA)
in each mode: Gradio's subdued text colour is 1.9:1 on white.
Gradio scopes this CSS by rewriting selectors and mangles a `.dark` rule with a selector
list (only its first selector keeps `.dark` in front), so each `.dark` rule has one selector.
"""

from __future__ import annotations

CSS = """
.gradio-container { max-width: 100% !important; }
.sf-hidden { display: none !important; }
.sf-warn { border-left: 4px solid #d62728; background: #fff1f0; color: #5c1111;
  padding: .4em .8em; margin: .2em 0; font-size: 13px; border-radius: 4px; }
.sf-warn ul { margin: .2em 0 0 1.2em; padding: 0; }
.sf-warn li { overflow-wrap: anywhere; }
.dark .sf-warn { background: #3b1717; color: #ffe3e0; }
.sf-summary { font-size: 14px; line-height: 1.6; }
.sf-summary .sf-csv { font-weight: 600; }
.sf-sens summary { cursor: pointer; font-size: 13px; }
.sf-table-wrap.sf-fits { max-height: none; }
.sf-table-wrap { overflow: auto; max-height: 620px; border: 1px solid var(--border-color-primary);
  border-radius: 6px; }
.sf-table { border-collapse: collapse; width: 100%; font-size: 13px;
  font-variant-numeric: tabular-nums; color: var(--body-text-color); }
.sf-table th { position: sticky; top: 0; z-index: 1; background: var(--background-fill-secondary);
  text-align: left; padding: 5px 6px; border-bottom: 1px solid var(--border-color-primary);
  cursor: pointer; white-space: nowrap; font-weight: 600; }
.sf-table th[aria-sort=descending], .sf-table th[aria-sort=ascending] { color: var(--color-accent); }
.sf-table td { padding: 4px 6px; border-bottom: 1px solid var(--border-color-primary);
  vertical-align: top; overflow-wrap: anywhere; }
.sf-board td:first-child { max-width: 24em; }
.sf-drill-head code, .sf-warn li { overflow-wrap: anywhere; }
.sf-table .sf-num { text-align: right; white-space: nowrap; }
.sf-board th { text-align: left; }
.sf-table tbody tr[data-sf-cell] { cursor: pointer; }
.sf-table tbody tr:hover { background: var(--background-fill-secondary); }
.sf-table tr.sf-disagree td:first-child { box-shadow: inset 3px 0 #d62728; }
.sf-nonrep td { opacity: .62; }
.sf-flag { color: #c62828; font-weight: 600; }
.dark .sf-flag { color: #ff8a80; }
.sf-why { display: block; font-size: 11px; color: #4f5661;
  white-space: normal; text-align: left; max-width: 16em; }
.sf-ci, .sf-sub { color: #4f5661; font-size: 11px; }
.dark .sf-ci { color: #c3c8d0; }
.dark .sf-sub { color: #c3c8d0; }
.dark .sf-why { color: #c3c8d0; }
.sf-neg { color: #b3261e; }
.dark .sf-neg { color: #ff8a80; }
.sf-pos { color: #1b6e20; }
.dark .sf-pos { color: #a5d6a7; }
.sf-sig { font-weight: 700; }
sup.sf-sig { font-size: 9px; margin-left: 1px; }
.sf-judge { font-size: 11px; }
.sf-phone { display: none; }
.sf-board td .sf-errors { white-space: normal; }
.sf-board td:first-child { min-width: 11em; }
.sf-model { overflow-wrap: anywhere; }
.sf-defs summary { cursor: pointer; font-size: 13px; }
.sf-defs dl { font-size: 12px; margin: .3em 0; display: grid; grid-template-columns: max-content 1fr;
  gap: 2px 12px; }
.sf-defs dt { font-weight: 600; }
.sf-defs dd { margin: 0; }
.sf-noise { font-size: 13px; margin: .3em 0; }
.sf-card { font-size: 11px; text-decoration: none; }
.sf-sources { margin-top: .4em; }
.sf-badge { display: inline-block; border-radius: 4px; padding: 0 5px; font-size: 12px;
  font-weight: 600; border: 1px solid currentColor; }
.sf-badge-bad { color: #b3261e; }
.sf-board td div.sf-badge { display: block; width: fit-content; margin: 2px 0 0 auto;
  font-size: 11px; }
.dark .sf-badge-bad { color: #ff8a80; }
.sf-nomatch .sf-reset { font-weight: 600; margin-left: .5em; }
.sf-pager { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; margin: 6px 0 2px;
  font-size: 13px; }
.sf-pager button { font: inherit; padding: 2px 10px; border: 1px solid var(--border-color-primary);
  border-radius: 4px; background: var(--background-fill-secondary); color: var(--body-text-color);
  cursor: pointer; }
.sf-pager button:disabled { cursor: default; opacity: .45; }
#sf-matrices td, #sf-matrices th { word-break: normal; overflow-wrap: normal; }
.sf-no { color: #b26a00; font-weight: 600; }
.dark .sf-no { color: #ffcc80; }
.sf-empty { padding: 1em; color: var(--body-text-color-subdued); }
.sf-small { font-size: 12px; border-collapse: collapse; }
.sf-small td, .sf-small th { padding: 2px 8px; border-bottom: 1px solid var(--border-color-primary); }
.sf-plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 14px; }
.sf-plot { margin: 0; color: var(--body-text-color); }
.sf-plot figcaption { font-weight: 600; font-size: 14px; margin-bottom: 4px; }
.sf-plot svg { width: 100%; height: auto; display: block; overflow: visible; }
.sf-plot text { fill: currentColor; font-size: 11px; }
.sf-plot .sf-title { font-size: 12px; }
.sf-plot .sf-qnote { fill: #c62828; font-size: 10px; }
.dark .sf-plot .sf-qnote { fill: #ff8a80; }
.sf-grid { stroke: currentColor; opacity: .12; }
.sf-zero { stroke: currentColor; opacity: .55; }
.sf-frame { fill: none; stroke: currentColor; opacity: .3; }
.sf-shade { fill: rgba(214, 39, 40, .10); }
.sf-diag { stroke: currentColor; opacity: .5; stroke-dasharray: 4 3; }
.sf-pt { cursor: pointer; r: 4.5px; }
.sf-pt { fill-opacity: .82; stroke: var(--background-fill-primary); stroke-width: .8; }
.sf-bars { fill: none; stroke-width: 1.2; opacity: .45; pointer-events: none; }
.sf-pt:hover, .sf-pt:focus { stroke: currentColor; stroke-width: 2; }
.sf-legend { font-size: 12px; display: flex; flex-wrap: wrap; gap: 4px 12px; }
.sf-key { min-width: 0; overflow-wrap: anywhere; }
.sf-key i { display: inline-block; width: 10px; height: 10px; border-radius: 50%;
  margin-right: 4px; vertical-align: -1px; }
.sf-key i.sf-dash { border-radius: 0; height: 0; width: 14px; border-top: 2px dashed currentColor; }
.sf-c0 { fill: #1f77b4; stroke: #1f77b4; background: #1f77b4; }
.sf-c1 { fill: #ff7f0e; stroke: #ff7f0e; background: #ff7f0e; }
.sf-c2 { fill: #2ca02c; stroke: #2ca02c; background: #2ca02c; }
.sf-c3 { fill: #d62728; stroke: #d62728; background: #d62728; }
.sf-c4 { fill: #9467bd; stroke: #9467bd; background: #9467bd; }
.sf-c5 { fill: #8c564b; stroke: #8c564b; background: #8c564b; }
.sf-c6 { fill: #e377c2; stroke: #e377c2; background: #e377c2; }
.sf-c7 { fill: #8a8a8a; stroke: #8a8a8a; background: #8a8a8a; }
.sf-c8 { fill: #bcbd22; stroke: #bcbd22; background: #bcbd22; }
.sf-c9 { fill: #17becf; stroke: #17becf; background: #17becf; }
.sf-hollow .sf-pt { fill: none; stroke: #8a8a8a; stroke-width: 1.6; }
.sf-key i.sf-ring { background: none; border: 2px solid #8a8a8a; box-sizing: border-box; }
.sf-drill-head h3 { margin: .2em 0; }
.sf-drill-head p { font-size: 12px; line-height: 1.7; }
.sf-task { font: inherit; padding: 1px 6px; border: 1px solid var(--border-color-primary);
  border-radius: 4px; background: var(--background-fill-secondary); color: var(--link-text-color);
  cursor: pointer; }
.sf-harmful td:first-child { color: #c62828; font-weight: 600; }
.dark .sf-harmful td:first-child { color: #ff8a80; }
.sf-bad { color: #c62828; font-weight: 700; }
.dark .sf-bad { color: #ff8a80; }
.sf-wrap { white-space: normal; word-break: break-word; max-width: 28em; }
.sf-traces { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 12px; }
.sf-trace { border: 1px solid var(--border-color-primary); border-radius: 6px; padding: 6px 10px;
  min-width: 0; }
.sf-trace h4 { margin: .2em 0; }
.sf-trace h4.sf-correct { color: #2e7d32; }
.sf-trace h4.sf-wrong { color: #c62828; }
.dark .sf-trace h4.sf-correct { color: #a5d6a7; }
.dark .sf-trace h4.sf-wrong { color: #ff8a80; }
.sf-msg pre, .sf-trace pre { white-space: pre-wrap; word-break: break-word; overflow-wrap: anywhere;
  font-size: 12px; margin: .2em 0 .6em; padding: 6px; background: var(--background-fill-secondary);
  border-radius: 4px; max-height: 480px; overflow: auto; }
.sf-msg summary { cursor: pointer; font-weight: 600; }
@media (max-width: 760px) {
  .gradio-container { padding-left: 6px !important; padding-right: 6px !important; }
  .sf-table { font-size: 12px; }
  .sf-table th, .sf-table .sf-num { white-space: normal; }
  .sf-table td, .sf-table th { padding: 3px 4px; }
  .sf-table .sf-ci, .sf-table td .sf-sub { display: block; }
  .sf-traces { grid-template-columns: minmax(0, 1fr); }
  .sf-why { max-width: 9em; }
  .sf-phone { display: block; }
  .sf-board td:first-child { min-width: 0; }
  #sf-matrices table { display: block; overflow-x: auto; }
  .sf-defs dl { grid-template-columns: 1fr; }
}
"""

#: One delegated click handler and one observer for the whole page. Clicks on elements
#: carrying data-sf-sort / data-sf-cell / data-sf-task are written into hidden textboxes whose
#: `change` events run the Python handlers; the rendered summary and drill-down header carry
#: the view's query string, which is mirrored into the address bar (shareable links).
HEAD = """
<script>
(() => {
  if (window.__skillfollowBoard) return;
  window.__skillfollowBoard = true;
  let nonce = 0;
  // A click that comes before the hidden box is mounted (Gradio loads each component's code
  // on its own) is kept and delivered once the box is there, not dropped.
  const send = (id, value, tries = 0) => {
    const box = document.querySelector(`#${id} textarea, #${id} input`);
    if (!box) {
      if (tries < 100) setTimeout(() => send(id, value, tries + 1), 100);
      return;
    }
    box.value = `${value}\\t${++nonce}`;
    box.dispatchEvent(new Event("input", { bubbles: true }));
  };
  const act = (event) => {
    if (event.target.closest("a")) return;  // a link (a model card) is not a row click
    const el = event.target.closest("[data-sf-sort],[data-sf-cell],[data-sf-task],[data-sf-page]");
    if (!el) return;
    if (el.dataset.sfSort) send("sf-sortbox", el.dataset.sfSort);
    else if (el.dataset.sfPage) send("sf-pagebox", el.dataset.sfPage);
    else if (el.dataset.sfCell) send("sf-openbox", el.dataset.sfCell);
    else send("sf-taskbox", el.dataset.sfTask);
  };
  document.addEventListener("click", act);
  // A plot point carries its hover text only in the first plot that draws its cell
  // (_plots._points): the others borrow that <title> when hovered or focused.
  const borrow = (event) => {
    const pt = event.target.closest && event.target.closest(".sf-pt");
    if (!pt || pt.querySelector("title")) return;
    const key = CSS.escape(pt.dataset.sfCell || "");
    const own = document.querySelector(`#sf-plots .sf-pt[data-sf-cell="${key}"] > title`);
    if (own) pt.appendChild(own.cloneNode(true));
  };
  document.addEventListener("pointerover", borrow);
  document.addEventListener("focusin", borrow);
  // Enter on a button is a click already.
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.target.closest("button")) act(e);
  });
  const ours = ["benchmark", "partition", "pool", "model", "min_cond", "nonreportable", "runs",
    "all", "sort", "cell", "pool_sources", "table_page"];
  const sync = () => {
    const summary = document.querySelector("#sf-summary [data-sf-query]");
    if (!summary || (summary.dataset.sfPending && location.search)) return;
    const params = new URLSearchParams(location.search);
    ours.forEach((k) => params.delete(k));  // keep others, such as Gradio's __theme
    new URLSearchParams(summary.dataset.sfQuery).forEach((v, k) => params.append(k, v));
    const head = document.querySelector("#sf-drill-header [data-sf-open]");
    if (head && head.dataset.sfOpen) params.set("cell", head.dataset.sfOpen);
    const query = params.toString();
    if (query !== location.search.replace(/^\\?/, "")) {
      // Opening another cell is a step the Back button undoes; a filter change is not.
      const before = new URLSearchParams(location.search).get("cell");
      const step = params.get("cell") && params.get("cell") !== before;
      history[step ? "pushState" : "replaceState"](
        history.state, "", query ? `?${query}` : location.pathname);
    }
    // An empty multiselect filter means every value: say so instead of a blank box.
    document.querySelectorAll(".sf-all input").forEach((input) => {
      const wrap = input.closest(".sf-all");
      const chosen = wrap && wrap.querySelector(".token");
      const want = chosen ? "" : "All";
      if (input.placeholder !== want) input.placeholder = want;
    });
  };
  // A phone starts with the filters folded (their label stays: one tap opens them).
  // Until the accordion answers (its handler may mount after the button), for 5 s at most.
  let seen = 0;
  const fold = () => {
    if (window.innerWidth > 760) return;
    const toggle = document.querySelector("#sf-filters > button.label-wrap");
    if (!toggle) return;
    seen = seen || Date.now();
    if (Date.now() - seen > 5000 || !toggle.classList.contains("open")) return;
    toggle.click();
    setTimeout(fold, 300);
  };
  new MutationObserver(fold).observe(document.documentElement, { childList: true, subtree: true });
  // Back (or Forward) to a board address: the server restores that view from its query.
  window.addEventListener("popstate", () => location.reload());
  new MutationObserver(sync).observe(document.documentElement, { childList: true, subtree: true });
})();
</script>
"""
