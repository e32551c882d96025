"""Load the `transitions` / `traces` of a results repo (Hub id or local folder) or a run dir.

A repo's config is the parquet files under `data/<config>/` (what its card declares, and what
`datasets.load_dataset(repo, config)` reads). The toolkit reads those files itself, all at
once with pyarrow's threaded dataset reader: `load_dataset` first converts every file into
its own Arrow cache, which made a cold load of 12,500 runs slower than reading the same rows
from one JSONL file (bench/hub.py). A Hub repo is listed once, the files a load needs are
sized against the read budget from that listing and then fetched at the listed commit
(`_HubListing`; the files land in the huggingface_hub cache, so a second load is offline-fast). Users keep calling
`datasets.load_dataset` on the same repos (tests/test_hub_read_path_olah.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import pyarrow as pa

from hf_skillfollow._files import OutsideSource, inside, regular_file
from hf_skillfollow.hub._layout import (
    CARD_PATH,
    RUN_ANNOTATIONS,
    RUN_TRACES,
    RUN_TRANSITIONS,
    HubError,
    is_repo_folder,
    is_run_dir,
    read_parquet_file,
    unreadable,
)
from hf_skillfollow.locations import is_hub_id
from hf_skillfollow.schema import (
    SchemaError,
    validate_annotations,
    validate_traces,
    validate_transitions,
    validate_verifications,
)

Config = Literal["transitions", "traces", "annotations", "verifications"]
_RUN_FILES = {
    "transitions": RUN_TRANSITIONS,
    "traces": RUN_TRACES,
    "annotations": RUN_ANNOTATIONS,
}
_CHECKS = {
    "transitions": validate_transitions,
    "traces": validate_traces,
    "annotations": validate_annotations,
    "verifications": validate_verifications,
}


def load_transitions(source: str | Path) -> pa.Table:
    """Validated transitions (schema v1) from a Hub repo id, a repo folder or a run directory."""
    return _load(source, "transitions")


def load_traces(source: str | Path) -> pa.Table:
    """Validated traces (schema v1) from a Hub repo id, a repo folder or a run directory."""
    return _load(source, "traces")


def load_annotations(source: str | Path) -> pa.Table | None:
    """Validated annotations from a Hub repo id, a repo folder or a run directory; None when
    the source has none (an `annotations` config is optional)."""
    try:
        return _load(source, "annotations")
    except HubError as exc:
        if "has no 'annotations' config" in str(exc) or "has no annotations.parquet" in str(exc):
            return None
        raise


def load_verifications(repo_id: str) -> pa.Table | None:
    """Validated verification records (docs/verify.md) of a Hub repo; None when it has none."""
    try:
        return _validate(_load_hub(repo_id, "verifications"), "verifications", repo_id)
    except HubError as exc:
        if "has no 'verifications' config" in str(exc):
            return None
        raise


def _load(source: str | Path, config: Config) -> pa.Table:
    path = Path(source)
    if path.exists():
        return _load_path(path, config)
    text = str(source)
    if is_hub_id(text):
        return _validate(_load_hub(text, config), config, text)
    raise HubError(f"{text}: no such file or directory, and not a Hub dataset repo id (ORG/NAME)")


def _load_path(path: Path, config: Config) -> pa.Table:
    if is_run_dir(path):
        file = path / _RUN_FILES[config]
        if not file.is_file():
            raise HubError(f"{path}: run directory has no {file.name}")
        return _read_parquet(_local(file, path), config)
    if is_repo_folder(path):
        files = [_local(f, path) for f in config_files(path, config)]
        return _validate(_read_config(files, config, str(path)), config, str(path))
    if path.is_file() and path.suffix == ".parquet":
        return _read_parquet(path, config)
    raise HubError(
        f"{path}: not a run directory (no {RUN_TRANSITIONS}), not a results repo folder "
        "(README.md + data/) and not a parquet file"
    )


def _read_parquet(file: Path, config: Config) -> pa.Table:
    from hf_skillfollow.hub._budget import check_files

    check_files([file], config, str(file))
    return _validate(read_parquet_file(file), config, str(file))


def config_files(root: Path, config: Config) -> list[Path]:
    """The parquet files the card of `root` declares for `config`, in name order; all of
    them inside `root` (`declared_patterns` refuses a path that leaves it)."""
    files: set[str] = set()
    for pattern in declared_patterns(root, config):
        files.update(_matching(root, pattern))
    return [Path(f) for f in sorted(files, key=lambda f: f.split(os.sep))]


def _inside(pattern: str, root: Path, config: str) -> str:
    """`pattern` when it names files inside the repo; a HubError naming the card field when it
    is absolute or climbs out with `..` (a card is the submitter's text: `../../x` would read
    rows from outside the snapshot)."""
    from pathlib import PurePosixPath, PureWindowsPath

    parts = PurePosixPath(pattern.replace("\\", "/")).parts
    if (
        not pattern.strip()
        or pattern.startswith(("/", "\\", "~"))
        or PureWindowsPath(pattern).drive
        or ".." in parts
        or "\0" in pattern
    ):
        raise HubError(
            f"{root / CARD_PATH}: configs[{config}].data_files path {pattern!r} leaves the "
            "repository (absolute, drive or '..'); a results repo declares paths inside itself "
            f"such as data/{config}/*.parquet"
        )
    return pattern


def _matching(root: Path, pattern: str) -> list[str]:
    """Parquet files matching `pattern` below `root`, as strings.

    The usual pattern, a folder then `*.parquet`, is one scandir whose entries know their
    type: a repo of 12,500 runs is 12,500 files, and glob plus a stat each took a second.
    """
    folder, _, name = pattern.rpartition("/")
    if name == "*.parquet" and not any(c in folder for c in "*?["):
        try:
            with os.scandir(root / folder) as entries:
                return [e.path for e in entries if e.name.endswith(".parquet") and e.is_file()]
        except (FileNotFoundError, NotADirectoryError):
            return []
    return [str(p) for p in root.glob(pattern) if p.is_file() and p.suffix == ".parquet"]


#: A results card's front matter: the toolkit writes about 1 KB; `datasets`' dataset_info
#: adds a few KB per config. A card is the publisher's text, read only this far.
MAX_CARD_FRONT_MATTER = 256 * 1024


def declared_patterns(root: Path, config: Config) -> list[str]:
    """`data_files` paths of `config` in the README's `configs` (what `load_dataset` reads)."""
    import yaml

    from hf_skillfollow._skill_meta import YAMLAliasError, _DuplicateKey, load_plain_yaml

    card = root / CARD_PATH
    block = _front_matter(card) if card.is_file() else None
    if block is None:
        return []
    try:
        meta = load_plain_yaml(block) or {}
    except YAMLAliasError as exc:
        # a few hundred bytes of nested aliases describe 10^9 paths ("billion laughs")
        raise HubError(
            f"{card}: its front matter has a YAML anchor or alias ({exc}); a results card "
            "declares its configs in plain YAML"
        ) from None
    except _DuplicateKey as exc:
        # huggingface_hub's card reader (`load_dataset` takes the configs from it) keeps the
        # last value; read as no configs, the repo was said to have none of `config`
        raise HubError(
            f"{card}: its front matter repeats a key ({exc}); a results card gives each key once"
        ) from None
    except yaml.YAMLError:
        return []
    configs = meta.get("configs") if isinstance(meta, dict) else None
    for entry in configs if isinstance(configs, list) else []:
        if isinstance(entry, dict) and entry.get("config_name") == config:
            return [_inside(p, root, config) for p in _paths(entry.get("data_files"))]
    return []


def _front_matter(card: Path) -> str | None:
    """The YAML between the card's opening and closing `---` lines, read line by line up to
    `MAX_CARD_FRONT_MATTER` bytes (a HubError naming the card past it); None without one."""
    read = 0
    lines: list[bytes] = []
    with open(regular_file(card), "rb") as fh:
        if fh.readline(8).rstrip(b"\r\n") != b"---":
            return None
        while read <= MAX_CARD_FRONT_MATTER:
            line = fh.readline(MAX_CARD_FRONT_MATTER + 1 - read)
            if not line:
                return None  # no closing line: no front matter, as before
            if line.rstrip(b"\r\n") == b"---":
                return b"".join(lines).decode("utf-8", errors="replace")
            lines.append(line)
            read += len(line)
    raise HubError(
        f"{card}: its front matter passes {MAX_CARD_FRONT_MATTER:,} bytes without its closing "
        "'---' line; a results card's configs take about 1 KB"
    )


def _paths(data_files: object) -> list[str]:
    if isinstance(data_files, str):
        return [data_files]
    if isinstance(data_files, dict):
        return _paths(data_files.get("path"))
    if isinstance(data_files, list):
        return [p for item in data_files for p in _paths(item)]
    return []


def _local(file: Path, root: Path) -> Path:
    """`file` of the local folder `root` when no link leads it out (`_files.inside`); a Hub
    snapshot is not asked: its files are the cache's links to its blobs."""
    try:
        return inside(file, root)
    except OutsideSource as exc:
        raise HubError(str(exc)) from None


def read_config_files(root: Path, config: Config, source: str) -> pa.Table:
    """Every row of `config` in the repo folder `root`, read in one threaded pass."""
    return _read_config(config_files(root, config), config, source)


def _read_config(files: list[Path], config: Config, source: str) -> pa.Table:
    if not files:
        raise HubError(
            f"{source}: not a skillfollow results repo: it has no {config!r} config "
            "(a results repo's README declares 'transitions' and 'traces' over data/<config>/*.parquet)"
        )
    return read_parquet_files(files, config, source)


def read_parquet_files(files: Sequence[Path], config: Config, source: str = "") -> pa.Table:
    """Rows of many parquet files as one table (the schema check is the caller's `_validate`).

    Each file through `ParquetFile.read` without pre-buffering or inner threads, a few files
    at a time: for a repo of 10^4 small run files that costs about half the CPU of one
    `pyarrow.dataset` scan (bench/hub.py). Every file must have the first file's schema; the
    error names the first one that does not. Transitions come back as one chunk per column.
    """
    from concurrent.futures import ThreadPoolExecutor

    from hf_skillfollow.hub._budget import BUDGETS, Meter

    meter = Meter(BUDGETS[config], source or str(Path(files[0]).parent))
    meter.count_files(files)
    lock = threading.Lock()

    def read(path: Path) -> pa.Table:
        import pyarrow.parquet as pq

        try:
            file = pq.ParquetFile(regular_file(path), pre_buffer=False)
            # the footer says what decoding may cost: checked before any row is read
            return meter.read_whole(path, file, lock)
        except (pa.ArrowException, OSError) as exc:
            raise SchemaError(unreadable(path, exc)) from None

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        tables = list(pool.map(read, files))
    first = tables[0].schema
    for path, table in zip(files, tables, strict=True):
        if not table.schema.equals(first):
            raise SchemaError(
                f"not a skillfollow results repo or run (schema v1): {path} has other {config} "
                f"columns or types than {files[0]}"
            )
    table = pa.concat_tables(tables)
    if config != "transitions":
        return table  # trace rows are large; one chunk could pass 2 GiB of text
    # One chunk per file would make every later step (schema check, metrics, to_pandas) pay
    # per chunk, 10^4 times per column; one copy of these small rows is cheaper than that.
    return table.combine_chunks()


def _load_hub(repo_id: str, config: Config) -> pa.Table:
    from huggingface_hub.errors import (
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        # One listing per load: the card's round and a second round for the paths it declares
        # are both sized and fetched from it, at the commit it was read at.
        listing = _HubListing.read(repo_id)
        folder = listing.fetch([CARD_PATH, f"data/{config}/*.parquet"], config)
        patterns = declared_patterns(folder, config)
        if patterns and patterns != [f"data/{config}/*.parquet"]:
            folder = listing.fetch(patterns, config)
    except (RepositoryNotFoundError, RevisionNotFoundError) as exc:
        raise HubError(
            f"{repo_id}: no such local path, and no accessible Hub dataset with that id "
            f"({_first_line(exc)})"
        ) from None
    except HfHubHTTPError as exc:
        raise HubError(f"{repo_id}: the Hub refused the download ({_first_line(exc)})") from None
    except (OSError, *_unreachable()) as exc:  # a file not fetched (mid-way), or not written
        raise HubError(
            f"{repo_id}: cannot download its {config} files ({_first_line(exc)})"
        ) from None
    return read_config_files(folder, config, repo_id)


class _HubListing:
    """A Hub dataset's files at one commit, listed once (`read`); `fetch` sizes the files a
    set of patterns matches against the read budget before downloading any of them.

    Where the Hub cannot be reached (offline, no connection, a server error), `commit` is None
    and `fetch` reads the cached copy only, as `snapshot_download` itself falls back to."""

    def __init__(self, repo_id: str, commit: str | None, sizes: dict[str, int], why: str) -> None:
        self.repo_id, self.commit, self.sizes, self.why = repo_id, commit, sizes, why

    @classmethod
    def read(cls, repo_id: str) -> _HubListing:
        from huggingface_hub import HfApi
        from huggingface_hub.errors import HfHubHTTPError

        api = HfApi()
        try:
            commit = api.repo_info(repo_id, repo_type="dataset", revision="main").sha
            tree = api.list_repo_tree(repo_id, repo_type="dataset", recursive=True, revision=commit)
            sizes = _listed_sizes(repo_id, tree)
        except HfHubHTTPError as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            if not (isinstance(status, int) and status >= 500):
                raise  # a missing repo, a refusal: said as such by `_load_hub`
            return cls(repo_id, None, {}, f"{type(exc).__name__}: {_first_line(exc)}")
        except _unreachable() as exc:
            return cls(repo_id, None, {}, f"{type(exc).__name__}: {_first_line(exc)}")
        return cls(repo_id, commit, sizes, "")

    def fetch(self, patterns: list[str], config: Config) -> Path:
        """The snapshot folder holding every listed file `patterns` match, downloaded at the
        listed commit after their sizes passed the budget of `config`."""
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError

        if self.commit is None:
            try:
                return Path(
                    snapshot_download(
                        self.repo_id,
                        repo_type="dataset",
                        allow_patterns=patterns,
                        local_files_only=True,
                    )
                )
            except LocalEntryNotFoundError:  # no (complete) cached copy: say why not fetched
                raise HubError(
                    f"{self.repo_id}: the Hub cannot be reached ({self.why}) and no copy of "
                    f"its {config} files is cached"
                ) from None
        from huggingface_hub.utils import filter_repo_objects

        wanted = sorted(filter_repo_objects(self.sizes, allow_patterns=patterns))
        if not wanted:  # no card and no files of `config`: said as for a folder without them
            _read_config([], config, self.repo_id)
        self._check_budget(wanted, config)
        return self._download(wanted)

    def _check_budget(self, paths: list[str], config: Config) -> None:
        from hf_skillfollow.hub._budget import BUDGETS, BudgetError, Meter

        Meter(BUDGETS[config], self.repo_id).count_files(paths)
        total = sum(self.sizes[p] for p in paths)
        limit = BUDGETS[config].file_bytes
        if total > limit:
            raise BudgetError(
                f"{self.repo_id}: its {config} files hold {total:,} bytes, past {limit:,} bytes "
                "of files (a source may cost at most that); nothing was downloaded and the "
                "source is not shown"
            )

    def _download(self, paths: list[str]) -> Path:
        from concurrent.futures import ThreadPoolExecutor

        from huggingface_hub import hf_hub_download

        def one(path: str) -> str:
            return hf_hub_download(self.repo_id, path, repo_type="dataset", revision=self.commit)

        with ThreadPoolExecutor(max_workers=8) as pool:
            local = list(pool.map(one, paths))
        snapshot = _snapshot_of(local[0], paths[0])
        _point_main_at(snapshot)
        return snapshot


#: Entries (files and folders) of a Hub repo's listing read before the source is refused: the
#: listing walks every page of the tree, and anyone can push (and tag) a repo of millions of
#: files. A results repo holds at most each config's file budget (`_budget.Budget.files`,
#: 100,000, four configs), its card and their folders.
MAX_LISTED_ENTRIES = 500_000


def _listed_sizes(repo_id: str, tree: Iterable[object]) -> dict[str, int]:
    """The listed size of every file of `tree`, read page by page up to `MAX_LISTED_ENTRIES`
    entries; past that a BudgetError, the rest of the listing never asked for."""
    from huggingface_hub.hf_api import RepoFile

    from hf_skillfollow.hub._budget import BudgetError

    sizes: dict[str, int] = {}
    for count, entry in enumerate(tree, 1):
        if count > MAX_LISTED_ENTRIES:
            raise BudgetError(
                f"{repo_id}: its listing holds more than {MAX_LISTED_ENTRIES:,} files and "
                "folders (a source may list at most that many); nothing was downloaded and the "
                "source is not shown"
            )
        if isinstance(entry, RepoFile):
            sizes[entry.path] = _listed_size(entry)
    return sizes


def _listed_size(file: object) -> int:
    """Bytes the Hub lists for a file: an LFS (or Xet) file's own size, not its pointer's."""
    lfs = getattr(file, "lfs", None)
    size = getattr(lfs, "size", None) if lfs is not None else None
    return int(size if size is not None else getattr(file, "size", 0) or 0)


def _snapshot_of(local: str, path: str) -> Path:
    """The snapshot folder (`.../snapshots/<commit>`) of `local`, the cached file of `path`."""
    return Path(local).parents[len(Path(path).parts) - 1]


def _point_main_at(snapshot: Path) -> None:
    """Record `snapshot` as the cached `main` (`refs/main`, the huggingface_hub cache layout),
    so an offline load reads the files fetched at that commit, as after `snapshot_download`."""
    ref = snapshot.parent.parent / "refs" / "main"
    if ref.is_file() and ref.read_text(encoding="utf-8") == snapshot.name:
        return
    ref.parent.mkdir(parents=True, exist_ok=True)
    part = ref.with_name(f".main.{os.getpid()}.{threading.get_ident()}")
    part.write_text(snapshot.name, encoding="utf-8")
    os.replace(part, ref)


def _unreachable() -> tuple[type[BaseException], ...]:
    """What huggingface_hub raises when the Hub cannot be reached: offline mode and its HTTP
    client's transport errors (httpx2, httpx or requests, by version; only one it imported).
    A missing repo, a refusal or a local failure is not among them."""
    import sys

    from huggingface_hub.errors import OfflineModeIsEnabled

    kinds: list[type[BaseException]] = [OfflineModeIsEnabled]
    for module, name in (("httpx2", "TransportError"), ("httpx", "TransportError"),
                         ("requests", "ConnectionError"), ("requests", "Timeout")):  # fmt: skip
        kind = getattr(sys.modules.get(module), name, None)
        if isinstance(kind, type) and issubclass(kind, BaseException):
            kinds.append(kind)
    return tuple(kinds)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _validate(table: pa.Table, config: Config, source: str) -> pa.Table:
    check = _CHECKS[config]
    try:
        return check(table, source=f"{source} [{config}]")
    except SchemaError as exc:
        raise SchemaError(f"not a skillfollow results repo or run (schema v1): {exc}") from None
