"""Where the board's rows come from: named sources, Hub discovery, and fail-soft loading.

A source is a local path (run directory, repo folder, parquet/jsonl file) or a Hub dataset
repo id. One bad source must never take the board down: each failure becomes a warning that
names the source, and the remaining sources still load.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from hf_skillfollow.locations import is_hub_id

ENV_SOURCES = "SKILLFOLLOW_SOURCES"
ENV_DISCOVER = "SKILLFOLLOW_DISCOVER"
DISCOVERY_TAG = "skillfollow"
# huggingface_hub retries an unreachable Hub for ~25 s. Discovery runs while gradio imports
# (~2.5 s, see _launch), so waiting up to 3 s adds at most about half a second to the start.
DISCOVERY_TIMEOUT_S = 3.0


@dataclass
class Loaded:
    """Validated rows of every source that loaded, plus what went wrong with the others."""

    transitions: pa.Table | None
    warnings: list[str] = field(default_factory=list)
    run_source: dict[str, str] = field(default_factory=dict)  # run_id -> source label
    loaded: list[str] = field(default_factory=list)


def split_sources(text: str | None) -> list[str]:
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def resolve_sources(
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    discover: bool | None = None,
) -> tuple[list[str], list[str]]:
    """Sources from arguments, else `SKILLFOLLOW_SOURCES`, plus Hub datasets tagged `skillfollow`.

    Discovery defaults to on only when no source was named (a Space with no config). Returns
    (sources, warnings); duplicates are dropped keeping the first occurrence.
    """
    env = os.environ if env is None else env
    named = list(args) or split_sources(env.get(ENV_SOURCES))
    if discover is None:
        flag = env.get(ENV_DISCOVER)
        discover = (flag.strip().lower() not in {"0", "false", "no", "off"}) if flag else not named
    warnings: list[str] = []
    found: list[str] = []
    if discover:
        found, warning = discover_hub_sources(env)
        if warning:
            warnings.append(warning)
    return list(dict.fromkeys(named + found)), warnings


def discover_hub_sources(env: Mapping[str, str]) -> tuple[list[str], str | None]:
    """Hub dataset repos tagged `skillfollow`; an unreachable Hub yields a warning, not an error."""
    if env.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        return (
            [],
            f"Hub discovery of datasets tagged '{DISCOVERY_TAG}' skipped: HF_HUB_OFFLINE is set",
        )
    result: dict[str, object] = {}

    def _list() -> None:
        try:
            from huggingface_hub import list_datasets

            result["ids"] = [d.id for d in list_datasets(filter=DISCOVERY_TAG)]
        except Exception as exc:  # any network/auth failure must stay a warning
            result["error"] = f"{type(exc).__name__}: {exc}"

    worker = threading.Thread(target=_list, daemon=True)
    worker.start()
    worker.join(DISCOVERY_TIMEOUT_S)
    if "ids" in result:
        return list(result["ids"]), None  # type: ignore[arg-type]
    reason = result.get("error") or f"no answer within {DISCOVERY_TIMEOUT_S:.0f} s"
    return (
        [],
        f"Hub discovery of datasets tagged '{DISCOVERY_TAG}' failed ({reason}); showing named sources only",
    )


def is_local(source: str) -> bool:
    return not is_hub_id(source)


def load_sources(sources: Sequence[str]) -> Loaded:
    """Read and validate every source; each failure is a warning naming the source."""
    tables: list[pa.Table] = []
    out = Loaded(transitions=None)
    if not sources:
        out.warnings.append(
            f"No sources configured: pass SOURCE arguments or set {ENV_SOURCES} (comma-separated Hub repo ids or local folders)"
        )
    for source in sources:
        table, warning = _load_one(source, _reader(source))
        if warning:
            out.warnings.append(warning)
        if table is None:
            continue
        tables.append(table)
        out.loaded.append(source)
        for run_id in table.column("run_id").unique().to_pylist():
            out.run_source.setdefault(run_id, source)
    out.transitions = _concat_unique(tables, out)
    return out


def _reader(source: str) -> Callable[[str], object]:
    if not is_local(source):
        from hf_skillfollow.hub import load_transitions

        return load_transitions
    try:
        from hf_skillfollow.sources import read_transitions
    except ImportError:  # older toolkits: the hub loader reads run dirs, repo folders, parquet
        return _read_local
    return read_transitions


def _read_local(source: str) -> pa.Table:
    """A run dir, repo folder or parquet file; or a folder whose subfolders are run dirs."""
    from hf_skillfollow.hub import load_transitions
    from hf_skillfollow.hub._layout import is_repo_folder, is_run_dir

    path = Path(source).expanduser()
    if path.is_file() or is_run_dir(path) or is_repo_folder(path):
        return load_transitions(path)
    runs = (
        sorted(p for p in path.iterdir() if is_run_dir(p) or is_repo_folder(p))
        if path.is_dir()
        else []
    )
    if not runs:
        raise FileNotFoundError(
            f"{path}: no run directories (transitions.parquet) or results repo folders inside"
        )
    return pa.concat_tables([load_transitions(p) for p in runs])


def _load_one(source: str, reader: Callable[[str], object]) -> tuple[pa.Table | None, str | None]:
    from hf_skillfollow.schema import validate_transitions

    if is_local(source) and not Path(source).expanduser().exists():
        return (
            None,
            f"Source '{source}' skipped: no such file or folder (and not a Hub repo id owner/name)",
        )
    try:
        table = validate_transitions(_as_table(reader(source)), source=source)
    except Exception as exc:  # wrong schema, unreadable file, network: warn and go on
        return None, f"Source '{source}' skipped: {_first_line(exc)}"
    if table.num_rows == 0:
        return None, f"Source '{source}' skipped: it holds no transition rows"
    return table, None


def _as_table(data: object) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    inner = getattr(getattr(data, "data", None), "table", None)  # datasets.Dataset
    if isinstance(inner, pa.Table):
        return inner
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise TypeError(
        f"reader returned {type(data).__name__}, expected a pyarrow Table or pandas DataFrame"
    )


def _concat_unique(tables: list[pa.Table], out: Loaded) -> pa.Table | None:
    """One table; a run published in two sources (say a local folder and its Hub copy) counts once."""
    if not tables:
        return None
    if len(tables) == 1:
        return tables[0]
    seen: set[str] = set()
    kept: list[pa.Table] = []
    for source, table in zip(out.loaded, tables, strict=True):
        runs = set(table.column("run_id").unique().to_pylist())
        dup = runs & seen
        if dup:
            import pyarrow.compute as pc

            out.warnings.append(
                f"Source '{source}': {len(dup)} run(s) already loaded from an earlier source were ignored ({sorted(dup)[:3]}...)"
            )
            table = table.filter(pc.invert(pc.is_in(table.column("run_id"), pa.array(sorted(dup)))))
        seen |= runs
        kept.append(table)
    return pa.concat_tables(kept)


def _first_line(exc: BaseException, limit: int = 400) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return f"{type(exc).__name__}: {line if len(line) <= limit else line[:limit] + '…'}"
